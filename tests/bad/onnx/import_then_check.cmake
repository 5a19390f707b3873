# An odd but valid model must import (exit 0) into a graph file that
# `tg-graph check` loads: TOOL, MODEL, WORKDIR (emptied first).
file(REMOVE_RECURSE "${WORKDIR}")
file(MAKE_DIRECTORY "${WORKDIR}")
execute_process(COMMAND ${TOOL} import ${MODEL} -o ${WORKDIR}/out.json RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err TIMEOUT 60)
if(NOT rc STREQUAL "0")
  message(FATAL_ERROR "import of ${MODEL} gave '${rc}', expected 0\nstderr:\n${err}\nstdout:\n${out}")
endif()
execute_process(COMMAND ${TOOL} check ${WORKDIR}/out.json RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                TIMEOUT 60)
if(NOT rc STREQUAL "0")
  message(FATAL_ERROR "tg-graph check refuses what import wrote from ${MODEL}: '${rc}'\nstderr:\n${err}")
endif()
file(REMOVE_RECURSE "${WORKDIR}")
message(STATUS "ok: ${out}")
