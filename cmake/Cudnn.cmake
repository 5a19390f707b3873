# cuDNN 9 (optional): the CUDA convolutions' library path (kernels/cuda/conv_cudnn.h).
# TWOGRAPH_CUDNN: AUTO (use it when found), ON (fail when not found) or OFF (never look).
# Looked for under TWOGRAPH_CUDNN_ROOT, then the CUDA toolkit, then the nvidia-cudnn Python
# package (site-packages/nvidia/cudnn, whose lib/ holds only libcudnn.so.9). Found, it sets
# TWOGRAPH_HAVE_CUDNN, the target twograph_cudnn, and the definition TWOGRAPH_HAVE_CUDNN=1
# on every target (kernels/cuda_options.h's default depends on it); not found, the direct
# kernels of kernels/cuda/conv.cu stay the only path.
set(TWOGRAPH_CUDNN AUTO CACHE STRING "Use cuDNN for the CUDA convolutions: AUTO, ON or OFF")
set(TWOGRAPH_CUDNN_ROOT "" CACHE PATH "A folder holding cuDNN's include/ and lib/ (searched first)")
set(TWOGRAPH_HAVE_CUDNN OFF)
if(TWOGRAPH_HAVE_CUDA AND NOT TWOGRAPH_CUDNN STREQUAL "OFF")
  set(_tg_cudnn_roots ${TWOGRAPH_CUDNN_ROOT} ${CUDAToolkit_LIBRARY_ROOT} ${CUDAToolkit_TARGET_DIR})
  find_program(TWOGRAPH_CUDNN_PYTHON NAMES python3)
  if(TWOGRAPH_CUDNN_PYTHON)
    execute_process(COMMAND ${TWOGRAPH_CUDNN_PYTHON} -c "import nvidia.cudnn as m; print(list(m.__path__)[0])"
                    OUTPUT_VARIABLE _tg_cudnn_py OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _tg_py_rc)
    if(_tg_py_rc EQUAL 0 AND _tg_cudnn_py)
      list(APPEND _tg_cudnn_roots ${_tg_cudnn_py})
    endif()
  endif()
  find_path(TWOGRAPH_CUDNN_INCLUDE cudnn_version.h HINTS ${_tg_cudnn_roots} PATH_SUFFIXES include)
  find_library(TWOGRAPH_CUDNN_LIBRARY NAMES cudnn libcudnn.so.9 HINTS ${_tg_cudnn_roots} PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu)
  set(_tg_cudnn_version "")
  if(TWOGRAPH_CUDNN_INCLUDE)
    file(STRINGS ${TWOGRAPH_CUDNN_INCLUDE}/cudnn_version.h _tg_v REGEX "^#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) ")
    string(REGEX REPLACE ".*CUDNN_MAJOR ([0-9]+).*CUDNN_MINOR ([0-9]+).*CUDNN_PATCHLEVEL ([0-9]+).*" "\\1.\\2.\\3"
           _tg_cudnn_version "${_tg_v}")
  endif()
  if(TWOGRAPH_CUDNN_INCLUDE AND TWOGRAPH_CUDNN_LIBRARY AND _tg_cudnn_version VERSION_GREATER_EQUAL 9)
    set(TWOGRAPH_HAVE_CUDNN ON)
    add_library(twograph_cudnn INTERFACE)
    target_include_directories(twograph_cudnn SYSTEM INTERFACE ${TWOGRAPH_CUDNN_INCLUDE})
    # Linked by path: the build tree's RPATH names its folder, and libcudnn.so.9 loads its
    # sub-libraries (libcudnn_cnn.so.9 and the engines) from that folder when it first runs.
    target_link_libraries(twograph_cudnn INTERFACE ${TWOGRAPH_CUDNN_LIBRARY})
    target_compile_definitions(twograph_common INTERFACE TWOGRAPH_HAVE_CUDNN=1)
    message(STATUS "cuDNN ${_tg_cudnn_version}: ${TWOGRAPH_CUDNN_LIBRARY} (CUDA convolutions through cuDNN)")
  else()
    set(_tg_why "looked under TWOGRAPH_CUDNN_ROOT, the CUDA toolkit and the nvidia-cudnn Python package")
    if(TWOGRAPH_CUDNN_INCLUDE AND _tg_cudnn_version AND _tg_cudnn_version VERSION_LESS 9)
      set(_tg_why "found cuDNN ${_tg_cudnn_version} in ${TWOGRAPH_CUDNN_INCLUDE}; version 9 or later is needed")
    endif()
    if(TWOGRAPH_CUDNN STREQUAL "ON")
      message(FATAL_ERROR "TWOGRAPH_CUDNN=ON but no usable cuDNN was found (${_tg_why}): set TWOGRAPH_CUDNN_ROOT "
                          "to the folder holding its include/ and lib/, or configure with -DTWOGRAPH_CUDNN=AUTO")
    endif()
    message(STATUS "cuDNN not found (${_tg_why}): the CUDA convolutions run on the direct kernels only; "
                   "set TWOGRAPH_CUDNN_ROOT to use it")
  endif()
endif()
