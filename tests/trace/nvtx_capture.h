#pragma once
// A static NVTX injection for the tests (nvtx_capture.cpp, CUDA builds): linked into a test
// binary it is the tool NVTX reports to, so the test sees every range the libraries push,
// on a machine with or without a GPU.
#include <string>
#include <vector>

namespace tg::testing {

struct NvtxRanges {
  std::vector<std::string> pushed;  // range names, in push order
  int popped = 0;
};
// What was pushed and popped since the last call; clears it.
NvtxRanges take_nvtx_ranges();

}  // namespace tg::testing
