# libFuzzer targets (TWOGRAPH_FUZZ=ON, preset `fuzz`, scripts/fuzz.sh). Fuzzing
# needs clang's libFuzzer runtime (Debian: apt-get install clang libclang-rt-14-dev)
# and builds CPU-only: the targets exercise graph/, which knows nothing of CUDA.
if(NOT TWOGRAPH_FUZZ)
  return()
endif()

if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "TWOGRAPH_FUZZ=ON needs clang (libFuzzer ships with it), but the C++ compiler is "
                      "${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER}. Configure with the preset: "
                      "`cmake --preset fuzz`, or pass -DCMAKE_CXX_COMPILER=clang++ "
                      "in a fresh build directory.")
endif()

# Fail here, not at the first link, when the runtime is missing.
include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer,address,undefined")
check_cxx_source_compiles([[
#include <cstddef>
#include <cstdint>
extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }
]] TWOGRAPH_HAVE_LIBFUZZER)
unset(CMAKE_REQUIRED_FLAGS)
if(NOT TWOGRAPH_HAVE_LIBFUZZER)
  message(FATAL_ERROR "TWOGRAPH_FUZZ=ON: ${CMAKE_CXX_COMPILER} cannot link -fsanitize=fuzzer,address,undefined; "
                      "install clang's sanitizer runtimes (Debian: apt-get install libclang-rt-14-dev), then "
                      "delete this build directory's CMakeCache.txt and configure again.")
endif()

# Everything the fuzzers link is instrumented for coverage and the sanitizers;
# only the fuzzer executables get libFuzzer's main (twograph_add_fuzzer).
# -UNDEBUG keeps assertions (ours and nlohmann's) live in the optimized build.
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
                    -fno-omit-frame-pointer -UNDEBUG)
add_link_options(-fsanitize=address,undefined)
message(STATUS "twograph: fuzz build (libFuzzer + ASan + UBSan, CPU-only)")

# twograph_add_fuzzer(NAME target SOURCES ... LIBS ... [DICT file] [SEEDS dir...] [SMOKE_SECONDS n])
# Adds the fuzzer and, when SMOKE_SECONDS is given, a ctest `fuzz:<target>:smoke`
# that runs it that long from the seeds (this test exists only in fuzz builds).
function(twograph_add_fuzzer)
  cmake_parse_arguments(F "" "NAME;DICT;SMOKE_SECONDS" "SOURCES;LIBS;SEEDS" ${ARGN})
  add_executable(${F_NAME} ${F_SOURCES})
  target_link_libraries(${F_NAME} PRIVATE ${F_LIBS} twograph_common)
  target_link_options(${F_NAME} PRIVATE -fsanitize=fuzzer)
  if(F_SMOKE_SECONDS)
    set(flags -max_total_time=${F_SMOKE_SECONDS} -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512
              -print_final_stats=1)
    if(F_DICT)
      list(APPEND flags -dict=${F_DICT})
    endif()
    string(REPLACE ";" " " flags "${flags}")
    string(REPLACE ";" " " seeds "${F_SEEDS}")
    add_test(NAME "fuzz:${F_NAME}:smoke"
             COMMAND ${CMAKE_COMMAND} -DFUZZER=$<TARGET_FILE:${F_NAME}> "-DFLAGS=${flags}" "-DSEEDS=${seeds}"
                     -DWORK=${CMAKE_CURRENT_BINARY_DIR}/${F_NAME}.smoke -P ${PROJECT_SOURCE_DIR}/cmake/FuzzSmoke.cmake)
    math(EXPR limit "${F_SMOKE_SECONDS} + 120")
    set_tests_properties("fuzz:${F_NAME}:smoke" PROPERTIES LABELS "cpu;fuzz" TIMEOUT ${limit})
  endif()
endfunction()
