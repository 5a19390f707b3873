# A short fuzz run for ctest: a fresh corpus in WORK (the seed directories are
# only read), crash files under WORK/artifacts. Fails on any crash, leak, timeout
# or out-of-memory report, and shows the input libFuzzer saved.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus ${WORK}/artifacts)
separate_arguments(flag_list UNIX_COMMAND "${FLAGS}")
separate_arguments(seed_list UNIX_COMMAND "${SEEDS}")
execute_process(COMMAND ${FUZZER} ${WORK}/corpus ${seed_list} ${flag_list} -artifact_prefix=${WORK}/artifacts/
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(GLOB artifacts ${WORK}/artifacts/*)
if(NOT rc STREQUAL "0" OR artifacts)
  message(FATAL_ERROR "fuzzer exit code '${rc}', artifacts: ${artifacts}\n${err}${out}")
endif()
string(REGEX MATCH "stat::number_of_executed_units: [0-9]+" execs "${err}")
message(STATUS "ok: ${execs}, no crash")
