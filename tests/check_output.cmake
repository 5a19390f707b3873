# Runs one good command and requires both its success and its output, which
# ctest's PASS_REGULAR_EXPRESSION alone would not (it ignores the exit code):
#   - exit code EXPECT_RC (default 0), not a signal or a timeout (run_expecting_rc.cmake);
#   - EXPECT, a regular expression, found in what it printed (stdout, then stderr).
# The command is `TOOL ARGS`, ARGS split like a shell line (quotes group words).
separate_arguments(cmd_args UNIX_COMMAND "${ARGS}")
if(NOT DEFINED EXPECT_RC)
  set(EXPECT_RC 0)
endif()
include(${CMAKE_CURRENT_LIST_DIR}/run_expecting_rc.cmake)
run_expecting_rc(120)
if(NOT "${out}${err}" MATCHES "${EXPECT}")
  message(FATAL_ERROR "the output does not match '${EXPECT}'\n${ctx}")
endif()
message(STATUS "ok: exit ${rc}, output matches '${EXPECT}'")
