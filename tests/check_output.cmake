# Runs one good command and requires both its success and its output, which
# ctest's PASS_REGULAR_EXPRESSION alone would not (it ignores the exit code):
#   - exit code EXPECT_RC (default 0), not a signal or a timeout;
#   - EXPECT, a regular expression, found in what it printed (stdout, then stderr).
# The command is `TOOL ARGS`, ARGS split like a shell line (quotes group words).
separate_arguments(cmd_args UNIX_COMMAND "${ARGS}")
if(NOT DEFINED EXPECT_RC)
  set(EXPECT_RC 0)
endif()
execute_process(COMMAND ${TOOL} ${cmd_args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
set(ctx "command: ${TOOL} ${ARGS}\nstdout:\n${out}\nstderr:\n${err}")
if(NOT rc STREQUAL "${EXPECT_RC}")
  message(FATAL_ERROR "expected exit code ${EXPECT_RC}, got '${rc}'\n${ctx}")
endif()
if(NOT "${out}${err}" MATCHES "${EXPECT}")
  message(FATAL_ERROR "the output does not match '${EXPECT}'\n${ctx}")
endif()
message(STATUS "ok: exit ${rc}, output matches '${EXPECT}'")
