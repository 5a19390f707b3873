// add, sub, mul, scale, fill, copy and cast (kernels/cpu/elementwise.cpp), on the frame of
// elementwise.cuh, and fused_elementwise: a chain of those and the activations in one
// kernel, each step by the functor the unfused op runs.
// The arithmetic uses __fadd_rn/__fmul_rn/... where the CPU reference is plain
// float math, so that nvcc cannot contract it into an FMA and the bits match.
#include <cuda_runtime.h>

#include "graph/float_formats.h"
#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/elementwise.cuh"

namespace tg::kernels::cuda {

namespace {

using detail::aligned16;
using detail::grid_for;
using detail::kBlock;
using detail::launch_ew;

struct AddF { __device__ float operator()(float a, float b) const { return __fadd_rn(a, b); } };
struct SubF { __device__ float operator()(float a, float b) const { return __fsub_rn(a, b); } };
struct MulF { __device__ float operator()(float a, float b) const { return __fmul_rn(a, b); } };
struct ScaleF {
  float alpha;
  __device__ float operator()(float a, float) const { return __fmul_rn(alpha, a); }
};
__device__ float load_f32(const void* p, int64_t i, DType dt) {
  switch (dt) {
    case DType::F32: return static_cast<const float*>(p)[i];
    case DType::BF16: return f32_from_bf16(static_cast<const uint16_t*>(p)[i]);
    case DType::F16: return f32_from_f16(static_cast<const uint16_t*>(p)[i]);
  }
  return 0.0f;
}
__device__ void store_f32(void* p, int64_t i, float v, DType dt) {
  switch (dt) {
    case DType::F32: static_cast<float*>(p)[i] = v; return;
    case DType::BF16: static_cast<uint16_t*>(p)[i] = bf16_from_f32(v); return;
    case DType::F16: static_cast<uint16_t*>(p)[i] = f16_from_f32(v); return;
  }
}
// The conversions are graph/float_formats.h's, the CPU reference's own code, so the
// bits agree by construction (NaN payloads included), not by the hardware's rounding.
__global__ void cast_kernel(const void* x, DType from, void* y, DType to, int64_t n) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    store_f32(y, i, load_f32(x, i, from), to);
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

// ---- fused_elementwise ----------------------------------------------------------------
// The program is a launch parameter, the same for every thread, so the loop over it and
// the switch on each opcode take one path across the grid. A chain needs one running
// value (acc); operands are that value or an input, loaded where it is read.
struct EwStep {
  uint8_t op, a, b, binary;
  float alpha;
};
struct EwArgs {
  const float* in[kMaxEwInputs];
  float* out;
  EwStep code[kMaxEwInstrs];
  int size, inputs;
  unsigned row_inputs;  // bit j: input j is a [cols] row, read at i % cols
  int64_t n, cols;
};

// One element, a float4, or two float4s a grid stride apart (two loads in flight per
// input, as the frame of elementwise.cuh has).
struct Float4x2 {
  float4 u, v;
};
template <typename F>
__device__ __forceinline__ float map(F f, float a, float b) { return f(a, b); }
template <typename F>
__device__ __forceinline__ float4 map(F f, float4 a, float4 b) {
  return make_float4(f(a.x, b.x), f(a.y, b.y), f(a.z, b.z), f(a.w, b.w));
}
template <typename F>
__device__ __forceinline__ Float4x2 map(F f, Float4x2 a, Float4x2 b) { return {map(f, a.u, b.u), map(f, a.v, b.v)}; }

template <typename T>
__device__ __forceinline__ T ew_apply(const EwStep& s, T a, T b) {
  switch (static_cast<EwOp>(s.op)) {
    case EwOp::add: return map(AddF{}, a, b);
    case EwOp::sub: return map(SubF{}, a, b);
    case EwOp::mul: return map(MulF{}, a, b);
    case EwOp::scale: return map(ScaleF{s.alpha}, a, a);
    case EwOp::relu: return map(detail::ReluF{}, a, a);
    case EwOp::relu_grad: return map(detail::ReluGradF{}, a, b);
    case EwOp::gelu: return map(detail::GeluF{}, a, a);
    case EwOp::gelu_grad: return map(detail::GeluGradF{}, a, b);
    case EwOp::tanh: return map(detail::TanhF{}, a, a);
    case EwOp::tanh_grad: return map(detail::TanhGradF{}, a, b);
    case EwOp::sigmoid: return map(detail::SigmoidF{}, a, a);
    case EwOp::sigmoid_grad: return map(detail::SigmoidGradF{}, a, b);
    case EwOp::exp: return map(detail::ExpF{}, a, a);
    case EwOp::log: return map(detail::LogF{}, a, a);
    case EwOp::log_grad: return map(detail::LogGradF{}, a, b);
    case EwOp::gelu_erf: return map(detail::GeluErfF{}, a, a);
    case EwOp::gelu_erf_grad: return map(detail::GeluErfGradF{}, a, b);
  }
  return a;
}

// Where the elements are: index i (in floats or float4s) and its column `col` (the index
// into a row input); the second pair for Float4x2.
struct At {
  int64_t i, col, i2 = 0, col2 = 0;
};
__device__ __forceinline__ bool is_row(const EwArgs& p, int j) { return (p.row_inputs >> j) & 1u; }
__device__ __forceinline__ float ew_load(const EwArgs& p, int j, const At& at, float) {
  return p.in[j][is_row(p, j) ? at.col : at.i];
}
__device__ __forceinline__ float4 ew_load(const EwArgs& p, int j, const At& at, float4) {
  return reinterpret_cast<const float4*>(p.in[j])[is_row(p, j) ? at.col : at.i];
}
__device__ __forceinline__ Float4x2 ew_load(const EwArgs& p, int j, const At& at, Float4x2) {
  const float4* in = reinterpret_cast<const float4*>(p.in[j]);
  const bool row = is_row(p, j);
  return {in[row ? at.col : at.i], in[row ? at.col2 : at.i2]};
}

template <typename T>
__device__ __forceinline__ T ew_run(const EwArgs& p, const At& at) {
  T acc{};
  for (int k = 0; k < p.size; ++k) {
    const EwStep s = p.code[k];
    const T a = s.a < p.inputs ? ew_load(p, s.a, at, T{}) : acc;
    const T b = !s.binary ? a : s.b < p.inputs ? ew_load(p, s.b, at, T{}) : acc;
    acc = ew_apply(s, a, b);
  }
  return acc;
}

// Columns follow the grid stride without a division per element: col < cols and
// step = stride % cols, so one subtraction wraps the sum.
struct Column {
  int64_t col, step, cols;
  __device__ int64_t next(int64_t c) const {
    c += step;
    return c >= cols ? c - cols : c;
  }
};
__device__ __forceinline__ Column first_column(const EwArgs& p, int64_t start, int64_t stride, int64_t cols) {
  if (!p.row_inputs || cols == 0) return {0, 0, 1};
  return {start % cols, stride % cols, cols};
}

// float4 of every input and the output; the row inputs then need cols % 4 == 0.
__global__ void fused_ew_vec_kernel(const __grid_constant__ EwArgs p, int64_t n4) {
  pdl::prologue();
  float4* out4 = reinterpret_cast<float4*>(p.out);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  Column c = first_column(p, tid, stride, p.cols / 4);
  int64_t i = tid;
  for (; i + stride < n4; i += 2 * stride) {
    const int64_t col2 = c.next(c.col);
    const Float4x2 r = ew_run<Float4x2>(p, At{i, c.col, i + stride, col2});
    out4[i] = r.u;
    out4[i + stride] = r.v;
    c.col = c.next(col2);
  }
  if (i < n4) out4[i] = ew_run<float4>(p, At{i, c.col});
  const int64_t t = 4 * n4 + tid;  // the n % 4 tail, by the first threads
  if (t < p.n) p.out[t] = ew_run<float>(p, At{t, p.row_inputs ? t % p.cols : 0});
}

__global__ void fused_ew_scalar_kernel(const __grid_constant__ EwArgs p) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  Column c = first_column(p, tid, stride, p.cols);
  for (int64_t i = tid; i < p.n; i += stride, c.col = c.next(c.col)) p.out[i] = ew_run<float>(p, At{i, c.col});
}

}  // namespace

void fused_elementwise(const OpCall& c, cudaStream_t s) {
  const EwProgram& prog = c.attrs->program;
  EwArgs p{};
  p.out = c.out.data;
  p.n = c.out.shape.numel();
  p.cols = c.out.shape.last();
  p.size = prog.size();
  p.inputs = c.num_inputs;
  bool vec = aligned16(p.out);
  for (int j = 0; j < c.num_inputs; ++j) {
    p.in[j] = c.input(j).data;
    if (c.input(j).shape.numel() != p.n) p.row_inputs |= 1u << j;
    vec = vec && aligned16(p.in[j]);
  }
  for (int k = 0; k < prog.size(); ++k) {
    const EwInstr& in = prog.code[static_cast<size_t>(k)];
    p.code[k] = {static_cast<uint8_t>(in.op), in.a, in.b, static_cast<uint8_t>(ew_op_binary(in.op)), in.alpha};
  }
  if (p.n <= 0) return;
  vec = vec && p.n > detail::kSmallElements && (p.row_inputs == 0 || p.cols % 4 == 0);
  if (vec) {
    const int64_t n4 = p.n / 4;
    const int64_t work = n4 > (p.n - 4 * n4) ? n4 : (p.n - 4 * n4);
    const int block = detail::block_for(work);
    detail::launch(TG_LAUNCH_SITE, fused_ew_vec_kernel, grid_for(work, block), block, s, p, n4);
  } else {
    const int block = detail::block_for(p.n);
    detail::launch(TG_LAUNCH_SITE, fused_ew_scalar_kernel, grid_for(p.n, block), block, s, p);
  }
}

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
void cast(const TensorView& x, const TensorView& y, cudaStream_t s) {
  const int64_t n = x.shape.numel();
  if (n <= 0) return;
  if (x.dtype == y.dtype) {
    TG_CUDA_CHECK(cudaMemcpyAsync(y.data, x.data, static_cast<size_t>(n) * dtype_size(x.dtype),
                                  cudaMemcpyDeviceToDevice, s));
    return;
  }
  detail::launch(TG_LAUNCH_SITE, cast_kernel, grid_for(n), kBlock, s, static_cast<const void*>(x.data), x.dtype,
                 static_cast<void*>(y.data), y.dtype, n);
}
void fill(float* y, float value, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  detail::launch(TG_LAUNCH_SITE, fill_kernel, grid_for(aligned16(y) ? n / 4 + 4 : n), kBlock, s, y, value, n);
}

}  // namespace tg::kernels::cuda
