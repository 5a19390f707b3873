# Writes the scale tests' forward graph of NODES nodes to FILE (WRITER), then runs
# `TOOL ARGS FILE` with its output to FILE.out: exit 0, and the listing's first line
# counts the training graph's nodes.
execute_process(COMMAND ${WRITER} ${NODES} ${FILE} RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc STREQUAL "0")
  message(FATAL_ERROR "writing ${FILE} failed (${rc}): ${err}")
endif()
separate_arguments(cmd_args UNIX_COMMAND "${ARGS}")
execute_process(COMMAND ${TOOL} ${cmd_args} ${FILE} RESULT_VARIABLE rc OUTPUT_FILE ${FILE}.out ERROR_VARIABLE err)
if(NOT rc STREQUAL "0")
  message(FATAL_ERROR "${TOOL} ${ARGS} ${FILE}: exit '${rc}'\n${err}")
endif()
file(STRINGS ${FILE}.out first LIMIT_COUNT 1)
if(NOT first MATCHES "${EXPECT}")
  message(FATAL_ERROR "${TOOL} ${ARGS} ${FILE}: the output starts '${first}', expected '${EXPECT}'")
endif()
file(REMOVE ${FILE}.out)
message(STATUS "ok: ${first}")
