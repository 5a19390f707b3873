# NCCL (optional): the CUDA backend's communicator for data parallelism over GPUs
# (kernels/cuda/collective.h). TWOGRAPH_NCCL: AUTO (use it when found), ON (fail when
# not found) or OFF (never look). Looked for under TWOGRAPH_NCCL_ROOT, then the CUDA toolkit.
# Only nccl.h is used at build time: libnccl.so.2 is opened when the first communicator is made
# (the path found here first, then the loader's search), so binaries do not link it and start,
# one-GPU runs included, on machines without it. Found, it sets TWOGRAPH_HAVE_NCCL,
# TWOGRAPH_NCCL_INCLUDE and TWOGRAPH_NCCL_LIBRARY (kernels/CMakeLists.txt uses them).
set(TWOGRAPH_NCCL AUTO CACHE STRING "Use NCCL for data parallelism over GPUs: AUTO, ON or OFF")
set(TWOGRAPH_NCCL_ROOT "" CACHE PATH "A folder holding NCCL's include/ and lib/ (searched first)")
set(TWOGRAPH_HAVE_NCCL OFF)
if(TWOGRAPH_HAVE_CUDA AND NOT TWOGRAPH_NCCL STREQUAL "OFF")
  set(_tg_nccl_roots ${TWOGRAPH_NCCL_ROOT} ${CUDAToolkit_LIBRARY_ROOT} ${CUDAToolkit_TARGET_DIR})
  find_path(TWOGRAPH_NCCL_INCLUDE nccl.h HINTS ${_tg_nccl_roots} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
  find_library(TWOGRAPH_NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${_tg_nccl_roots} PATH_SUFFIXES lib lib64
               lib/x86_64-linux-gnu)
  set(_tg_nccl_version "")
  if(TWOGRAPH_NCCL_INCLUDE)
    file(STRINGS ${TWOGRAPH_NCCL_INCLUDE}/nccl.h _tg_v REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
    string(REGEX REPLACE ".*NCCL_MAJOR ([0-9]+).*NCCL_MINOR ([0-9]+).*NCCL_PATCH ([0-9]+).*" "\\1.\\2.\\3"
           _tg_nccl_version "${_tg_v}")
  endif()
  # 2.10 brought ncclAvg, the mean the all_reduce op computes.
  if(TWOGRAPH_NCCL_INCLUDE AND TWOGRAPH_NCCL_LIBRARY AND _tg_nccl_version VERSION_GREATER_EQUAL 2.10)
    set(TWOGRAPH_HAVE_NCCL ON)
    message(STATUS "NCCL ${_tg_nccl_version}: ${TWOGRAPH_NCCL_LIBRARY} (opened at run time for data parallelism)")
  else()
    set(_tg_why "looked under TWOGRAPH_NCCL_ROOT and the CUDA toolkit")
    if(_tg_nccl_version AND _tg_nccl_version VERSION_LESS 2.10)
      set(_tg_why "found NCCL ${_tg_nccl_version} in ${TWOGRAPH_NCCL_INCLUDE}; version 2.10 or later is needed")
    endif()
    if(TWOGRAPH_NCCL STREQUAL "ON")
      message(FATAL_ERROR "TWOGRAPH_NCCL=ON but no usable NCCL was found (${_tg_why}): set TWOGRAPH_NCCL_ROOT "
                          "to the folder holding its include/ and lib/, or configure with -DTWOGRAPH_NCCL=AUTO")
    endif()
    message(STATUS "NCCL not found (${_tg_why}): data parallelism runs on the CPU backend's thread ranks only")
  endif()
endif()
