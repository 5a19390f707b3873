// The injection: NVTX calls InitializeInjectionNvtx2_fnptr once, at its first call, and
// this one puts its own RangePushA and RangePop into NVTX's core function table.
#include "tests/trace/nvtx_capture.h"

#include <cstdint>
#include <mutex>

// The strong definition NVTX's weak one gives way to, declared before NVTX's headers (which
// then leave out their own): NvtxInitializeInjectionNvtxFunc_t spelled out.
extern "C" int tg_nvtx_capture_initialize(const void* (*get_table)(uint32_t));
extern "C" int (*InitializeInjectionNvtx2_fnptr)(const void* (*)(uint32_t));
int (*InitializeInjectionNvtx2_fnptr)(const void* (*)(uint32_t)) = tg_nvtx_capture_initialize;
#define NVTX_STATIC_INJECTION_IMPL
#include <nvtx3/nvToolsExt.h>

namespace tg::testing {
namespace {

std::mutex g_mutex;
NvtxRanges g_ranges;

int NVTX_API push_a(const char* message) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_ranges.pushed.emplace_back(message ? message : "");
  return static_cast<int>(g_ranges.pushed.size());
}

int NVTX_API pop() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return ++g_ranges.popped;
}

}  // namespace
}  // namespace tg::testing

extern "C" int tg_nvtx_capture_initialize(NvtxGetExportTableFunc_t get_table) {
  using namespace tg::testing;
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_table(NVTX_ETID_CALLBACKS));
  NvtxFunctionTable core = nullptr;
  unsigned int size = 0;
  if (!callbacks || !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &size) ||
      size <= NVTX_CBID_CORE_RangePop)
    return 0;
  *core[NVTX_CBID_CORE_RangePushA] = reinterpret_cast<NvtxFunctionPointer>(push_a);
  *core[NVTX_CBID_CORE_RangePop] = reinterpret_cast<NvtxFunctionPointer>(pop);
  return 1;
}

namespace tg::testing {

NvtxRanges take_nvtx_ranges() {
  std::lock_guard<std::mutex> lock(g_mutex);
  NvtxRanges out = std::move(g_ranges);
  g_ranges = {};
  return out;
}

}  // namespace tg::testing
