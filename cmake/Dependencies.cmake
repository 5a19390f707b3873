# Third-party dependencies. fmt is used from its headers only (no libfmt at run
# time) so that the binaries run on the GPU machine, which has none of Debian's
# packages; its implementation is compiled once, in cmake/fmt/fmt_once.cpp.
find_package(fmt REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(doctest REQUIRED)
find_package(Threads REQUIRED)

set(BLA_VENDOR OpenBLAS)
if(TWOGRAPH_STATIC_BLAS AND NOT TWOGRAPH_SANITIZE)
  set(BLA_STATIC ON)
endif()
find_package(BLAS REQUIRED)
find_path(TWOGRAPH_CBLAS_INCLUDE cblas.h PATH_SUFFIXES openblas x86_64-linux-gnu/openblas-pthread openblas-pthread)
if(NOT TWOGRAPH_CBLAS_INCLUDE)
  message(FATAL_ERROR "cblas.h not found: install libopenblas-dev (apt-get install libopenblas-dev)")
endif()
add_library(twograph_blas INTERFACE)
target_link_libraries(twograph_blas INTERFACE ${BLAS_LIBRARIES} Threads::Threads)
target_include_directories(twograph_blas SYSTEM INTERFACE ${TWOGRAPH_CBLAS_INCLUDE})
if(BLA_STATIC)
  # Static OpenBLAS pulls in libgfortran for its LAPACK half; link it statically too.
  find_library(TWOGRAPH_GFORTRAN_STATIC NAMES libgfortran.a PATHS /usr/lib/gcc/x86_64-linux-gnu/12 /usr/lib/gcc/x86_64-linux-gnu/13)
  find_library(TWOGRAPH_QUADMATH_STATIC NAMES libquadmath.a PATHS /usr/lib/gcc/x86_64-linux-gnu/12 /usr/lib/gcc/x86_64-linux-gnu/13)
  if(TWOGRAPH_GFORTRAN_STATIC)
    target_link_libraries(twograph_blas INTERFACE ${TWOGRAPH_GFORTRAN_STATIC})
  endif()
  if(TWOGRAPH_QUADMATH_STATIC)
    target_link_libraries(twograph_blas INTERFACE ${TWOGRAPH_QUADMATH_STATIC})
  endif()
  target_link_libraries(twograph_blas INTERFACE m)
endif()

set(TWOGRAPH_HAVE_CUDA OFF)
if(NOT TWOGRAPH_CUDA STREQUAL "OFF" AND NOT TWOGRAPH_SANITIZE)
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # Hopper machine code plus portable PTX that the driver JIT-compiles elsewhere.
      set(CMAKE_CUDA_ARCHITECTURES 90-real 75-virtual)
    endif()
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(TWOGRAPH_HAVE_CUDA ON)
  elseif(TWOGRAPH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "TWOGRAPH_CUDA=ON but no CUDA compiler was found: put nvcc on PATH or set CMAKE_CUDA_COMPILER")
  endif()
endif()

# fmt's headers without FMT_HEADER_ONLY, and its implementation compiled once: with
# FMT_HEADER_ONLY every file recompiled and re-optimized it (two thirds of the build).
get_target_property(TWOGRAPH_FMT_INCLUDE fmt::fmt-header-only INTERFACE_INCLUDE_DIRECTORIES)
add_library(twograph_fmt STATIC ${PROJECT_SOURCE_DIR}/cmake/fmt/fmt_once.cpp)
target_include_directories(twograph_fmt SYSTEM PUBLIC ${TWOGRAPH_FMT_INCLUDE})
set_target_properties(twograph_fmt PROPERTIES POSITION_INDEPENDENT_CODE ON)

# Everything links this: fmt, include root, version info.
add_library(twograph_common INTERFACE)
target_include_directories(twograph_common INTERFACE ${PROJECT_SOURCE_DIR})
target_link_libraries(twograph_common INTERFACE twograph_fmt)
if(NOT TWOGRAPH_TRACE_SITES)
  target_compile_definitions(twograph_common INTERFACE TWOGRAPH_NO_TRACE_SITES=1)
  message(STATUS "Trace sites compiled out (TWOGRAPH_TRACE_SITES=OFF): --trace is refused")
endif()
if(TWOGRAPH_HAVE_CUDA)
  target_compile_definitions(twograph_common INTERFACE TWOGRAPH_HAVE_CUDA=1)
endif()
include(${CMAKE_CURRENT_LIST_DIR}/Cudnn.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/CudnnFrontend.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/Nccl.cmake)
# -DTWOGRAPH_SOURCE_REV=... names the source when this tree's .git cannot (a copy of
# a working tree on another machine; scripts/device/build-there.sh passes it).
# "-dirty": built with uncommitted changes, so the revision alone does not say what ran.
if(TWOGRAPH_SOURCE_REV)
  set(TWOGRAPH_GIT_REV "${TWOGRAPH_SOURCE_REV}")
else()
  execute_process(COMMAND git describe --always --dirty --abbrev=7 WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                  OUTPUT_VARIABLE TWOGRAPH_GIT_REV OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
endif()
if(NOT TWOGRAPH_GIT_REV)
  set(TWOGRAPH_GIT_REV unknown)
endif()
# Only the report writer needs these; as definitions on every target they would
# recompile the whole tree after each commit.
# A build without the trace sites says so in every report's tool.build_type, so that its rows
# are never taken for an ordinary build's.
set(_tg_build_type "${CMAKE_BUILD_TYPE}")
if(NOT TWOGRAPH_TRACE_SITES)
  set(_tg_build_type "${CMAKE_BUILD_TYPE}, no trace sites")
endif()
set(TWOGRAPH_VERSION_DEFS TWOGRAPH_VERSION="${PROJECT_VERSION}" TWOGRAPH_GIT_REV="${TWOGRAPH_GIT_REV}"
    TWOGRAPH_BUILD_TYPE="${_tg_build_type}")

# twograph_add_subfolders(): add_subdirectory for each subfolder of the current folder that
# has a CMakeLists.txt, in name order: a new component or suite is a folder, not an edit here.
function(twograph_add_subfolders)
  file(GLOB subs LIST_DIRECTORIES true CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*)
  list(SORT subs)
  foreach(sub ${subs})
    if(IS_DIRECTORY ${sub} AND EXISTS ${sub}/CMakeLists.txt)
      add_subdirectory(${sub})
    endif()
  endforeach()
endfunction()

# twograph_case_lines(FILE OUT): the lines of a test-case table, without its comments (#...)
# and blank lines; a change to FILE reconfigures.
function(twograph_case_lines file out)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${file})
  file(STRINGS ${file} lines)
  set(kept)
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "^#" AND NOT line MATCHES "^[ \t]*$")
      string(REPLACE ";" "\\;" line "${line}")  # a ';' in a line stays in it, as file(STRINGS) keeps it
      list(APPEND kept "${line}")
    endif()
  endforeach()
  set(${out} "${kept}" PARENT_SCOPE)
endfunction()

# twograph_split_row(ROW VAR...): the fields of a "a|b|c" row, in order, into the variables.
function(twograph_split_row row)
  string(REPLACE "|" ";" fields "${row}")
  set(i 0)
  foreach(var IN LISTS ARGN)
    list(GET fields ${i} value)
    set(${var} "${value}" PARENT_SCOPE)
    math(EXPR i "${i} + 1")
  endforeach()
endfunction()

include(doctest)
# twograph_add_test(NAME target LABEL cpu|gpu [TIMEOUT seconds] SOURCES ... LIBS ...)
# GPU tests print "TG_SKIP" when there is no device; ctest shows them as skipped.
# TIMEOUT bounds each test case (ctest's default is 1500 s): for tests whose size is the
# check, a slow step must fail them, not stall the run.
function(twograph_add_test)
  cmake_parse_arguments(T "" "NAME;LABEL;TIMEOUT" "SOURCES;LIBS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} doctest::doctest twograph_test_main)
  set(props LABELS ${T_LABEL} SKIP_REGULAR_EXPRESSION "TG_SKIP")
  if(T_TIMEOUT)
    list(APPEND props TIMEOUT ${T_TIMEOUT})
  endif()
  doctest_discover_tests(${T_NAME} TEST_PREFIX "${T_NAME}:" ADD_LABELS 0 PROPERTIES ${props}
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
endfunction()
