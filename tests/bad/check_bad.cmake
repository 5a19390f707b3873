# Runs one bad input and requires a clean refusal:
#   - exit code EXPECT_RC (default 2), not a signal (a crash or abort shows up as
#     a signal name, a hang as the timeout);
#   - FRAGMENT on stderr (the message names the problem), and no sign of a crash
#     or an internal error there;
#   - nothing on stdout (no partial result a redirect would keep);
#   - at most 20000 bytes on stderr (a hostile file's 10 MB name or 100k errors must
#     not flood the terminal: messages cap names and error lists);
#   - with WORKDIR: the folder is made empty before the run and must still be
#     empty after it, so no report, CSV or temp file was left behind.
# The command is `TOOL ARGS` (ARGS split like a shell line: quotes group words;
# no brackets, semicolons or empty words), or `TOOL check FILE` when only FILE is set.
if(DEFINED ARGS)
  separate_arguments(cmd_args UNIX_COMMAND "${ARGS}")
else()
  set(cmd_args check ${FILE})
endif()
if(NOT DEFINED EXPECT_RC)
  set(EXPECT_RC 2)
endif()
if(DEFINED WORKDIR)
  file(REMOVE_RECURSE "${WORKDIR}")
  file(MAKE_DIRECTORY "${WORKDIR}")
endif()
include(${CMAKE_CURRENT_LIST_DIR}/../run_expecting_rc.cmake)
run_expecting_rc(60)
string(FIND "${err}" "${FRAGMENT}" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "stderr lacks the fragment '${FRAGMENT}'\n${ctx}")
endif()
foreach(bad "internal error" "terminate called" "Sanitizer" "Assertion")
  string(FIND "${err}" "${bad}" pos)
  if(NOT pos EQUAL -1)
    message(FATAL_ERROR "stderr shows '${bad}'\n${ctx}")
  endif()
endforeach()
string(LENGTH "${err}" err_bytes)
if(err_bytes GREATER 20000)
  string(SUBSTRING "${err}" 0 2000 err_head)
  message(FATAL_ERROR "stderr holds ${err_bytes} bytes, more than 20000; messages must cap names and lists\n"
                      "command: ${TOOL} ${ARGS}\nstderr (the first 2000 bytes):\n${err_head}")
endif()
if(NOT out STREQUAL "")
  message(FATAL_ERROR "a refused run printed on stdout\n${ctx}")
endif()
if(DEFINED WORKDIR)
  file(GLOB_RECURSE left LIST_DIRECTORIES true "${WORKDIR}/*")
  if(left)
    message(FATAL_ERROR "left behind in ${WORKDIR}: ${left}\n${ctx}")
  endif()
  file(REMOVE_RECURSE "${WORKDIR}")
endif()
message(STATUS "ok: exit ${rc}, stderr: ${err}")
