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
  DType dtype = DType::F32;  // its tensors' element type (a cast: its input's)
  DType to = DType::F32;     // a cast: its output's element type
  // A launcher that no IR op reaches yet runs through this instead of `call`.
  std::function<void(const kernels::CudaExecContext&)> launch;
};

// Owns the device buffers of all cases of one size and element type; `bytes` is the size of
// the main tensor (x), so a 16-bit case holds twice the elements of its f32 twin. Rows are
// 1024 wide for the row-wise ops (a transformer's width). A 16-bit set has the ops the CUDA
// backend runs in that type (kernels/cuda/dtype_support.cpp), and "cast", from f32 to it and
// back; an f32 set has no cast.
class CaseSet {
 public:
  CaseSet(int64_t bytes, const std::vector<std::string>& only, DType dtype = DType::F32);
  std::vector<KernelCase>& cases() { return cases_; }
  // The ops of `only` (all when empty) that have no kernel in this set's dtype.
  const std::vector<std::string>& without_kernel() const { return without_kernel_; }

 private:
  float* buffer(int64_t n, float value, DType dt);
  DType dtype_;
  std::vector<std::string> without_kernel_;
  std::vector<cuda::DeviceBuffer> staging_;  // f32 values cast into 16-bit buffers; freed once they are
  std::vector<cuda::DeviceBuffer> buffers_;
  std::vector<std::unique_ptr<Attrs>> attrs_;
  std::vector<std::unique_ptr<std::vector<kernels::TensorView>>> more_;  // variadic inputs past kMaxOpInputs
  std::vector<KernelCase> cases_;
};

// All op names CaseSet knows, for --ops and --help.
std::vector<std::string> case_names();

}  // namespace tg::bench
