#pragma once
// NVTX ranges so that Nsight Systems shows phases and ops by name. Header-only
// nvtx3 from the CUDA toolkit (it costs ~nothing when no tool is attached); a no-op
// in CPU-only builds.
//
//   { TG_NVTX_RANGE("compile"); ... }   // the range ends with the scope
#ifdef TWOGRAPH_HAVE_CUDA
#include <nvtx3/nvToolsExt.h>
#endif

namespace tg::harness {

class NvtxRange {
 public:
  explicit NvtxRange(const char* name) {
#ifdef TWOGRAPH_HAVE_CUDA
    nvtxRangePushA(name);
#else
    (void)name;
#endif
  }
  ~NvtxRange() {
#ifdef TWOGRAPH_HAVE_CUDA
    nvtxRangePop();
#endif
  }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace tg::harness

#define TG_NVTX_CAT2(a, b) a##b
#define TG_NVTX_CAT(a, b) TG_NVTX_CAT2(a, b)
#define TG_NVTX_RANGE(name) ::tg::harness::NvtxRange TG_NVTX_CAT(tg_nvtx_range_, __LINE__)(name)
