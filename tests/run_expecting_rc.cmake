# For the -P scripts that run one command (check_output.cmake, bad/check_bad.cmake):
# run_expecting_rc(TIMEOUT) runs `${TOOL} ${cmd_args}`, sets rc, out, err and ctx (the
# command and what it printed, for messages), and fails unless it exited with EXPECT_RC:
# a crash or abort shows up as a signal name, a hang as the timeout, each said so.
macro(run_expecting_rc timeout)
  execute_process(COMMAND ${TOOL} ${cmd_args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  TIMEOUT ${timeout})
  set(ctx "command: ${TOOL} ${ARGS}\nstderr:\n${err}\nstdout:\n${out}")
  if(NOT rc MATCHES "^[0-9]+$")
    message(FATAL_ERROR "killed by a signal or timed out: '${rc}'\n${ctx}")
  endif()
  if(NOT rc STREQUAL "${EXPECT_RC}")
    message(FATAL_ERROR "expected exit code ${EXPECT_RC}, got '${rc}'\n${ctx}")
  endif()
endmacro()
