// The launch machinery of the CUDA backend (launch.cuh): the per-device launch
// information, the launch scope's PDL choice, grid sizes and the launch-error message.
#include <cuda_runtime.h>

#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"

namespace tg::kernels::cuda {

namespace detail {

namespace {
// The PDL choice of this thread's innermost LaunchScope (cuda_kernels.h); on outside any.
thread_local bool t_pdl = true;

// What every launch asks of the current device, read once per device: its SM count
// (grid sizes) and whether it has PDL (compute capability >= 9.0). Packed into one
// atomic so that a reader sees both or neither; 0 means not read yet.
constexpr int kMaxDevices = 64;
std::atomic<int> g_device_info[kMaxDevices];
struct DeviceInfo {
  int sm_count;
  bool pdl;
};
DeviceInfo device_info() {
  int dev = 0;
  TG_CUDA_CHECK(cudaGetDevice(&dev));
  if (dev < 0 || dev >= kMaxDevices) dev = 0;
  int v = g_device_info[dev].load(std::memory_order_relaxed);
  if (v == 0) {
    int sms = 0, major = 0;
    TG_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    TG_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    v = (sms << 1) | (major >= 9 ? 1 : 0);
    g_device_info[dev].store(v, std::memory_order_relaxed);
  }
  return {v >> 1, (v & 1) != 0};
}
}  // namespace

int sm_count() { return device_info().sm_count; }

bool pdl_enabled() { return t_pdl && device_info().pdl; }

void throw_launch(cudaError_t e, LaunchSite at, dim3 grid, dim3 block) {
  // throw_cuda clears the (non-sticky) launch error so that the next call starts clean.
  const std::string call = fmt::format("kernel launch (grid {}x{}x{}, block {}x{}x{})", grid.x, grid.y, grid.z,
                                       block.x, block.y, block.z);
  ::tg::cuda_detail::throw_cuda(e, call.c_str(), at.file, at.line);
}

int grid_for(int64_t work, int block) {
  const int64_t want = (work + block - 1) / block;
  const int64_t cap = static_cast<int64_t>(sm_count()) * (2048 / block);
  const int64_t g = want < cap ? want : cap;
  return g < 1 ? 1 : static_cast<int>(g);
}

}  // namespace detail

LaunchScope::LaunchScope(bool pdl) : was_(detail::t_pdl) { detail::t_pdl = pdl; }
LaunchScope::~LaunchScope() { detail::t_pdl = was_; }
bool pdl_active() { return detail::pdl_enabled(); }

}  // namespace tg::kernels::cuda
