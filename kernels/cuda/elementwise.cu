// Elementwise ops, bias_add and the optimizer updates. One grid-stride kernel shape:
// float4 loads/stores when every pointer is 16-byte aligned (two vectors in flight
// per thread), the n % 4 tail by the first threads; a scalar kernel otherwise.
// The arithmetic uses __fadd_rn/__fmul_rn/... where the CPU reference is plain
// float math, so that nvcc cannot contract it into an FMA and the bits match.
#include <cuda_runtime.h>

#include <cmath>

#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_kernels.h"

namespace tg::kernels::cuda {

namespace detail {

namespace {
// -1: not decided yet (TG_PDL read at first use), 0 off, 1 on where the device has it.
std::atomic<int> g_pdl_mode{-1};

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

bool pdl_enabled() {
  int mode = g_pdl_mode.load(std::memory_order_relaxed);
  if (mode < 0) {
    const char* v = std::getenv("TG_PDL");
    mode = (v && v[0] == '0') ? 0 : 1;
    g_pdl_mode.store(mode, std::memory_order_relaxed);
  }
  return mode != 0 && device_info().pdl;
}

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

namespace {

using detail::aligned16;
using detail::grid_for;
using detail::kBlock;

// F: float operator()(float a, float b) const; unary ops ignore b (passed as a).
template <bool kBinary, typename F>
__global__ void ew_vec_kernel(F f, const float* a, const float* b, float* y, int64_t n4, int64_t n) {
  pdl::prologue();
  const float4* a4 = reinterpret_cast<const float4*>(a);
  const float4* b4 = reinterpret_cast<const float4*>(kBinary ? b : a);
  float4* y4 = reinterpret_cast<float4*>(y);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  auto op4 = [&](float4 u, float4 v) { return make_float4(f(u.x, v.x), f(u.y, v.y), f(u.z, v.z), f(u.w, v.w)); };
  int64_t i = tid;
  for (; i + stride < n4; i += 2 * stride) {
    const float4 u0 = a4[i], u1 = a4[i + stride];
    const float4 v0 = kBinary ? b4[i] : u0, v1 = kBinary ? b4[i + stride] : u1;
    y4[i] = op4(u0, v0);
    y4[i + stride] = op4(u1, v1);
  }
  if (i < n4) y4[i] = op4(a4[i], kBinary ? b4[i] : a4[i]);
  const int64_t t = 4 * n4 + tid;
  if (t < n) y[t] = f(a[t], kBinary ? b[t] : a[t]);
}

template <bool kBinary, typename F>
__global__ void ew_scalar_kernel(F f, const float* a, const float* b, float* y, int64_t n) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = f(a[i], kBinary ? b[i] : a[i]);
}

// Small tensors: one element per thread, 32-bit indices, no loop. A chain of tiny ops
// is bound by how fast one kernel follows another, and the fewer instructions
// between the PDL wait and the grid's end, the sooner the next one may run.
template <bool kBinary, typename F>
__global__ void ew_small_kernel(F f, const float* a, const float* b, float* y, int n) {
  pdl::prologue();
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) y[i] = f(a[i], kBinary ? b[i] : a[i]);
}
constexpr int64_t kSmallElements = 1024;  // at most 4 blocks of 256: beyond, float4 loads pay

template <bool kBinary, typename F>
void launch_ew(F f, const float* a, const float* b, float* y, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  if (n <= kSmallElements) {
    const int block = detail::block_for(n);
    detail::launch(TG_LAUNCH_SITE, ew_small_kernel<kBinary, F>, static_cast<int>((n + block - 1) / block), block, s,
                   f, a, b, y, static_cast<int>(n));
  } else if (aligned16(a) && (!kBinary || aligned16(b)) && aligned16(y)) {
    const int64_t n4 = n / 4;
    const int64_t work = n4 > (n - 4 * n4) ? n4 : (n - 4 * n4);
    const int block = detail::block_for(work);
    detail::launch(TG_LAUNCH_SITE, ew_vec_kernel<kBinary, F>, grid_for(work, block), block, s, f, a, b, y, n4, n);
  } else {
    const int block = detail::block_for(n);
    detail::launch(TG_LAUNCH_SITE, ew_scalar_kernel<kBinary, F>, grid_for(n, block), block, s, f, a, b, y, n);
  }
}

struct AddF { __device__ float operator()(float a, float b) const { return __fadd_rn(a, b); } };
struct SubF { __device__ float operator()(float a, float b) const { return __fsub_rn(a, b); } };
struct MulF { __device__ float operator()(float a, float b) const { return __fmul_rn(a, b); } };
struct ScaleF {
  float alpha;
  __device__ float operator()(float a, float) const { return __fmul_rn(alpha, a); }
};
struct ReluF { __device__ float operator()(float a, float) const { return a > 0.0f ? a : 0.0f; } };
struct ReluGradF { __device__ float operator()(float dy, float y) const { return y > 0.0f ? dy : 0.0f; } };

constexpr float kSqrt2OverPi = 0.79788456080286535588f;
constexpr float kGeluCubic = 0.044715f;
struct GeluF {
  __device__ float operator()(float x, float) const {
    const float u = kSqrt2OverPi * (x + kGeluCubic * x * x * x);
    return 0.5f * x * (1.0f + tanhf(u));
  }
};
struct GeluGradF {
  __device__ float operator()(float dy, float x) const {
    const float t = tanhf(kSqrt2OverPi * (x + kGeluCubic * x * x * x));
    const float d = 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
    return dy * d;
  }
};
// mse_loss_grad's scale s = 2*dloss/n is read from device memory by each thread.
struct MseGradF {
  const float* dloss;
  float n;
  __device__ float operator()(float p, float t) const {
    const float s = __fdiv_rn(__fmul_rn(2.0f, *dloss), n);
    return __fmul_rn(s, __fsub_rn(p, t));
  }
};
struct SgdF {
  float lr;
  __device__ float operator()(float p, float g) const { return __fsub_rn(p, __fmul_rn(lr, g)); }
};

__global__ void padded_mse_grad_kernel(const float* p, const float* t, const float* count, const float* dloss,
                                       float* dp, int64_t n) {
  pdl::prologue();
  const float c = *count;
  const bool ok = c >= 1.0f && c <= static_cast<float>(n) && c == floorf(c);
  const int64_t real = ok ? static_cast<int64_t>(c) : 0;
  const float s = __fdiv_rn(__fmul_rn(2.0f, *dloss), c);  // MseGradF's scale with n = c
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    dp[i] = !ok ? NAN : (i < real ? __fmul_rn(s, __fsub_rn(p[i], t[i])) : 0.0f);
}

__global__ void fill_kernel(float* y, float value, int64_t n) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (aligned16(y)) {
    const int64_t n4 = n / 4;
    float4* y4 = reinterpret_cast<float4*>(y);
    for (int64_t j = i; j < n4; j += stride) y4[j] = make_float4(value, value, value, value);
    if (4 * n4 + i < n) y[4 * n4 + i] = value;
  } else {
    for (; i < n; i += stride) y[i] = value;
  }
}

// bias_add: each thread walks whole float4s of a row-major [rows, cols] tensor; the
// vector path needs cols % 4 == 0 so that a float4 never straddles two rows.
__global__ void bias_vec_kernel(const float* x, const float* bias, float* y, int64_t n4, int64_t cols4) {
  pdl::prologue();
  const float4* x4 = reinterpret_cast<const float4*>(x);
  const float4* b4 = reinterpret_cast<const float4*>(bias);
  float4* y4 = reinterpret_cast<float4*>(y);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += stride) {
    const float4 u = x4[i], v = b4[i % cols4];
    y4[i] = make_float4(__fadd_rn(u.x, v.x), __fadd_rn(u.y, v.y), __fadd_rn(u.z, v.z), __fadd_rn(u.w, v.w));
  }
}
__global__ void bias_scalar_kernel(const float* x, const float* bias, float* y, int64_t n, int64_t cols) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = __fadd_rn(x[i], bias[i % cols]);
}

__global__ void sgd_momentum_kernel(float* p, const float* g, float* v, float lr, float momentum, int64_t n) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  auto step = [&](float& pp, float gg, float& vv) {
    vv = __fadd_rn(__fmul_rn(momentum, vv), gg);
    pp = __fsub_rn(pp, __fmul_rn(lr, vv));
  };
  if (aligned16(p) && aligned16(g) && aligned16(v)) {
    const int64_t n4 = n / 4;
    float4* p4 = reinterpret_cast<float4*>(p);
    const float4* g4 = reinterpret_cast<const float4*>(g);
    float4* v4 = reinterpret_cast<float4*>(v);
    for (int64_t j = i; j < n4; j += stride) {
      float4 pp = p4[j], vv = v4[j];
      const float4 gg = g4[j];
      step(pp.x, gg.x, vv.x);
      step(pp.y, gg.y, vv.y);
      step(pp.z, gg.z, vv.z);
      step(pp.w, gg.w, vv.w);
      p4[j] = pp;
      v4[j] = vv;
    }
    if (4 * n4 + i < n) step(p[4 * n4 + i], g[4 * n4 + i], v[4 * n4 + i]);
  } else {
    for (; i < n; i += stride) step(p[i], g[i], v[i]);
  }
}

}  // namespace

void set_pdl(bool enabled) { detail::g_pdl_mode.store(enabled ? 1 : 0, std::memory_order_relaxed); }
bool pdl_active() { return detail::pdl_enabled(); }

void add(const float* a, const float* b, float* y, int64_t n, cudaStream_t s) { launch_ew<true>(AddF{}, a, b, y, n, s); }
void sub(const float* a, const float* b, float* y, int64_t n, cudaStream_t s) { launch_ew<true>(SubF{}, a, b, y, n, s); }
void mul(const float* a, const float* b, float* y, int64_t n, cudaStream_t s) { launch_ew<true>(MulF{}, a, b, y, n, s); }
void scale(const float* x, float alpha, float* y, int64_t n, cudaStream_t s) {
  launch_ew<false>(ScaleF{alpha}, x, nullptr, y, n, s);
}
void copy(const float* x, float* y, int64_t n, cudaStream_t s) {
  if (x == y || n <= 0) return;
  TG_CUDA_CHECK(cudaMemcpyAsync(y, x, static_cast<size_t>(n) * sizeof(float), cudaMemcpyDeviceToDevice, s));
}
void relu(const float* x, float* y, int64_t n, cudaStream_t s) { launch_ew<false>(ReluF{}, x, nullptr, y, n, s); }
void relu_grad(const float* dy, const float* y, float* dx, int64_t n, cudaStream_t s) {
  launch_ew<true>(ReluGradF{}, dy, y, dx, n, s);
}
void gelu(const float* x, float* y, int64_t n, cudaStream_t s) { launch_ew<false>(GeluF{}, x, nullptr, y, n, s); }
void gelu_grad(const float* dy, const float* x, float* dx, int64_t n, cudaStream_t s) {
  launch_ew<true>(GeluGradF{}, dy, x, dx, n, s);
}
void mse_loss_grad(const float* p, const float* t, const float* dloss, float* dp, int64_t n, cudaStream_t s) {
  launch_ew<true>(MseGradF{dloss, static_cast<float>(n)}, p, t, dp, n, s);
}
void padded_mse_loss_grad(const float* p, const float* t, const float* count, const float* dloss, float* dp, int64_t n,
                          cudaStream_t s) {
  if (n <= 0) return;
  const int block = detail::block_for(n);
  detail::launch(TG_LAUNCH_SITE, padded_mse_grad_kernel, grid_for(n, block), block, s, p, t, count, dloss, dp, n);
}
void sgd(float* p, const float* g, float lr, int64_t n, cudaStream_t s) { launch_ew<true>(SgdF{lr}, p, g, p, n, s); }

void fill(float* y, float value, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  detail::launch(TG_LAUNCH_SITE, fill_kernel, grid_for(aligned16(y) ? n / 4 + 4 : n), kBlock, s, y, value, n);
}

void bias_add(const float* x, const float* bias, float* y, int64_t rows, int64_t cols, cudaStream_t s) {
  const int64_t n = rows * cols;
  if (n <= 0) return;
  if (cols % 4 == 0 && aligned16(x) && aligned16(bias) && aligned16(y))
    detail::launch(TG_LAUNCH_SITE, bias_vec_kernel, grid_for(n / 4), kBlock, s, x, bias, y, n / 4, cols / 4);
  else
    detail::launch(TG_LAUNCH_SITE, bias_scalar_kernel, grid_for(n), kBlock, s, x, bias, y, n, cols);
}

void sgd_momentum(float* p, const float* g, float* v, float lr, float momentum, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  detail::launch(TG_LAUNCH_SITE, sgd_momentum_kernel, grid_for(n / 4 + 4), kBlock, s, p, g, v, lr, momentum, n);
}

}  // namespace tg::kernels::cuda
