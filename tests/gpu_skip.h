#pragma once
// GPU tests call TG_REQUIRE_GPU() first. Without a device they print TG_SKIP,
// which ctest's SKIP_REGULAR_EXPRESSION turns into a visible "skipped".
#include <cstdio>

namespace tg::testing {
bool have_cuda_device();  // defined in tests/kernels (links cudart when built with CUDA)
}

#define TG_REQUIRE_GPU()                                                      \
  do {                                                                        \
    if (!::tg::testing::have_cuda_device()) {                                 \
      std::printf("TG_SKIP: no CUDA device on this machine\n");              \
      return;                                                                 \
    }                                                                         \
  } while (0)
