#pragma once
// The kernels tg-kernels measures: one OpCall per op at a given tensor size, with
// the bytes it must move (read + written) for the GB/s column.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/raii.h"

namespace tg::bench {

struct KernelCase {
  std::string op;        // op name, plus the layout where it matters ("softmax[r,1024]")
  kernels::OpCall call;  // pointers into `buffers`
  int64_t bytes_moved;   // minimum DRAM traffic: every input read once, every output written once
  // A launcher that no IR op reaches yet runs through this instead of `call`.
  std::function<void(const kernels::CudaExecContext&)> launch;
};

// Owns the device buffers of all cases of one size; `bytes` is the size of the main
// tensor (x). Rows are 1024 wide for the row-wise ops (a transformer's width).
class CaseSet {
 public:
  CaseSet(int64_t bytes, const std::vector<std::string>& only);
  std::vector<KernelCase>& cases() { return cases_; }

 private:
  float* buffer(int64_t n, float value);
  std::vector<cuda::DeviceBuffer> buffers_;
  std::vector<std::unique_ptr<Attrs>> attrs_;
  std::vector<std::unique_ptr<std::vector<kernels::TensorView>>> more_;  // variadic inputs past kMaxOpInputs
  std::vector<KernelCase> cases_;
};

// All op names CaseSet knows, for --ops and --help.
std::vector<std::string> case_names();

}  // namespace tg::bench
