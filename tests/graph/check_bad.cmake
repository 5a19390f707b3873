# Runs `TOOL check FILE` (or `TOOL ARGS`) and requires exit code 2 with FRAGMENT
# on stderr. A crash shows up as another exit code or a signal name; a hang as
# the timeout.
if(DEFINED ARGS)
  separate_arguments(cmd_args UNIX_COMMAND "${ARGS}")
else()
  set(cmd_args check ${FILE})
endif()
execute_process(COMMAND ${TOOL} ${cmd_args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 30)
if(NOT rc STREQUAL "2")
  message(FATAL_ERROR "expected exit code 2, got '${rc}'\nstderr:\n${err}\nstdout:\n${out}")
endif()
string(FIND "${err}" "${FRAGMENT}" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "stderr lacks the fragment '${FRAGMENT}':\n${err}")
endif()
message(STATUS "ok: exit 2, stderr: ${err}")
