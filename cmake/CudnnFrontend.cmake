# The cuDNN frontend (optional, header-only): the C++ graph API through which the fused
# attention ops run on cuDNN's flash attention (kernels/cuda/attention_cudnn.h). Needs cuDNN
# itself (cmake/Cudnn.cmake). Looked for, in order, under TWOGRAPH_CUDNN_FRONTEND_ROOT, under
# third_party/cudnn_frontend (which scripts/bootstrap.sh and scripts/fetch-cudnn-frontend.sh
# fill from PyPI's nvidia-cudnn-frontend wheel), then in the Python package `cudnn` if one is
# installed (the same wheel, installed: its include/ sits beside the package). A folder counts
# when it holds include/cudnn_frontend.h of version 1.13 or later (the first whose SDPA
# attributes have set_generate_stats, which the attention path uses; the deterministic
# backward it needs came in 1.5). Found, it sets TWOGRAPH_HAVE_CUDNN_FRONTEND, the target
# twograph_cudnn_frontend and the definition TWOGRAPH_HAVE_CUDNN_FRONTEND=1 on every target
# (kernels/cuda_options.h's default of attention_cudnn); not found, the attention ops run on
# the project's own kernels only (kernels/cuda/attention.cu).
set(TWOGRAPH_CUDNN_FRONTEND_ROOT "" CACHE PATH "A folder holding the cuDNN frontend's include/ (searched first)")
set(TWOGRAPH_HAVE_CUDNN_FRONTEND OFF)
if(TWOGRAPH_HAVE_CUDNN)
  set(_tg_fe_roots ${TWOGRAPH_CUDNN_FRONTEND_ROOT} ${PROJECT_SOURCE_DIR}/third_party/cudnn_frontend)
  if(TWOGRAPH_CUDNN_PYTHON)
    execute_process(COMMAND ${TWOGRAPH_CUDNN_PYTHON} -c
                            "import os, cudnn; print(os.path.dirname(os.path.dirname(cudnn.__file__)))"
                    OUTPUT_VARIABLE _tg_fe_py OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _tg_fe_rc)
    if(_tg_fe_rc EQUAL 0 AND _tg_fe_py)
      list(APPEND _tg_fe_roots ${_tg_fe_py})
    endif()
  endif()
  set(_tg_fe_include "")
  set(_tg_fe_version "")
  set(_tg_fe_why "looked under TWOGRAPH_CUDNN_FRONTEND_ROOT, third_party/cudnn_frontend and the Python package cudnn")
  foreach(_tg_root IN LISTS _tg_fe_roots)
    if(_tg_fe_include OR NOT EXISTS ${_tg_root}/include/cudnn_frontend_version.h)
      continue()
    endif()
    file(STRINGS ${_tg_root}/include/cudnn_frontend_version.h _tg_v
         REGEX "^#define CUDNN_FRONTEND_(MAJOR|MINOR|PATCH)_VERSION ")
    string(REGEX REPLACE ".*MAJOR_VERSION ([0-9]+).*MINOR_VERSION ([0-9]+).*PATCH_VERSION ([0-9]+).*" "\\1.\\2.\\3"
           _tg_v "${_tg_v}")
    if(_tg_v VERSION_GREATER_EQUAL 1.13)
      set(_tg_fe_include ${_tg_root}/include)
      set(_tg_fe_version ${_tg_v})
    else()
      set(_tg_fe_why "found cuDNN frontend ${_tg_v} in ${_tg_root}; version 1.13 or later is needed")
    endif()
  endforeach()
  if(_tg_fe_include)
    set(TWOGRAPH_HAVE_CUDNN_FRONTEND ON)
    add_library(twograph_cudnn_frontend INTERFACE)
    target_include_directories(twograph_cudnn_frontend SYSTEM INTERFACE ${_tg_fe_include})
    # The frontend bundles its own nlohmann/json for serialising graphs, which the project does
    # not use: skipping it keeps one json (the project's) in the program.
    target_compile_definitions(twograph_cudnn_frontend INTERFACE CUDNN_FRONTEND_SKIP_JSON_LIB=1)
    # The frontend's headers also hold engines it compiles at run time with NVRTC (for other
    # graphs than attention), whose calls the linker must still resolve: the toolkit's libnvrtc,
    # linked as cuBLAS is.
    target_link_libraries(twograph_cudnn_frontend INTERFACE twograph_cudnn CUDA::nvrtc)
    target_compile_definitions(twograph_common INTERFACE TWOGRAPH_HAVE_CUDNN_FRONTEND=1)
    message(STATUS "cuDNN frontend ${_tg_fe_version}: ${_tg_fe_include} (attention through cuDNN's fused SDPA)")
  else()
    message(STATUS "cuDNN frontend not found (${_tg_fe_why}): attention runs on the project's own kernels only; "
                   "run scripts/fetch-cudnn-frontend.sh or set TWOGRAPH_CUDNN_FRONTEND_ROOT")
  endif()
elseif(TWOGRAPH_HAVE_CUDA)
  message(STATUS "cuDNN frontend not looked for: no cuDNN (cmake/Cudnn.cmake), so attention runs on the project's "
                 "own kernels only")
endif()
