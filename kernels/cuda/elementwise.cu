// add, sub, mul, scale, fill, copy, cast and where (kernels/cpu/elementwise.cpp), on the frame of
// elementwise.cuh, and fused_elementwise: a chain of those and the activations in one
// kernel, each step by the functor the unfused op runs. All but fill (f32) and cast run
// in every dtype of storage.h.
// The arithmetic uses __fadd_rn/__fmul_rn/... where the CPU reference is plain
// float math, so that nvcc cannot contract it into an FMA and the bits match.
#include <cuda_runtime.h>

#include "graph/broadcast.h"
#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/elementwise.cuh"

namespace tg::kernels::cuda {

namespace {

using detail::aligned16;
using detail::grid_for;
using detail::kBlock;
using detail::kPack;
using detail::launch_ew;
using detail::Lanes;
using detail::load;
using detail::load_pack;
using detail::map;
using detail::store;
using detail::store_pack;
using detail::Store;

struct AddF { __device__ float operator()(float a, float b) const { return __fadd_rn(a, b); } };
struct SubF { __device__ float operator()(float a, float b) const { return __fsub_rn(a, b); } };
struct MulF { __device__ float operator()(float a, float b) const { return __fmul_rn(a, b); } };
struct ScaleF {
  float alpha;
  __device__ float operator()(float a, float) const { return __fmul_rn(alpha, a); }
};
// The conversions are storage.h's, which give graph/float_formats.h's bits (NaN payloads
// included), the CPU reference's.
template <DType From, DType To>
__global__ void cast_kernel(const Store<From>* x, Store<To>* y, int64_t n) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    store<To>(y, i, load<From>(x, i));
}
// The same conversions 8 elements a thread: 16-byte loads and stores on both sides (two f32
// packs or one 16-bit pack), so that narrowing a weight matrix moves at the memory's speed
// rather than at that of 2-byte stores. The tail (n % 8) is the first threads' scalar work.
template <DType From, DType To>
__global__ void cast_vec_kernel(const Store<From>* x, Store<To>* y, int64_t n) {
  pdl::prologue();
  const int64_t n8 = n / 8;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t i = first; i < n8; i += stride) {
    float v[8];
    if constexpr (detail::kPack<From> == 8) {
      load_pack<From>(x, i, v);
    } else {
      load_pack<From>(x, 2 * i, v);
      load_pack<From>(x, 2 * i + 1, v + 4);
    }
    if constexpr (detail::kPack<To> == 8) {
      store_pack<To>(y, i, v);
    } else {
      store_pack<To>(y, 2 * i, v);
      store_pack<To>(y, 2 * i + 1, v + 4);
    }
  }
  if (first < n - 8 * n8) store<To>(y, 8 * n8 + first, load<From>(x, 8 * n8 + first));
}
// where's index arithmetic: the output's dims and each input's strides (0 where it broadcasts).
struct WhereIndex {
  int rank;
  int64_t dims[kMaxRank];
  int64_t strides[3][kMaxRank];
};
template <DType D>
__global__ void where_kernel(const void* cond, DType cond_dtype, const Store<D>* a, const Store<D>* b, Store<D>* y,
                             const __grid_constant__ WhereIndex w, int64_t n) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += stride) {
    int64_t rem = e, p[3] = {0, 0, 0};
    for (int d = w.rank - 1; d >= 0; --d) {
      const int64_t i = rem % w.dims[d];
      rem /= w.dims[d];
#pragma unroll
      for (int k = 0; k < 3; ++k) p[k] += i * w.strides[k][d];
    }
    const bool t = cond_dtype == DType::I32   ? static_cast<const int32_t*>(cond)[p[0]] != 0
                   : cond_dtype == DType::I64 ? static_cast<const int64_t*>(cond)[p[0]] != 0
                                              : static_cast<const float*>(cond)[p[0]] != 0.0f;
    y[e] = t ? a[p[1]] : b[p[2]];
  }
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
// value (acc); operands are that value or an input, loaded where it is read. Every input
// and the output have the call's dtype: the chain runs in f32 registers and the store
// rounds once, as the CPU reference (the f32 chain on the widened inputs) does.
struct EwStep {
  uint8_t op, a, b, binary;
  float alpha;
};
struct EwArgs {
  const void* in[kMaxEwInputs];
  void* out;
  EwStep code[kMaxEwInstrs];
  int size, inputs;
  unsigned row_inputs;  // bit j: input j is a [cols] row, read at i % cols
  int64_t n, cols;
};

template <int N>
__device__ __forceinline__ Lanes<N> ew_apply(const EwStep& s, const Lanes<N>& a, const Lanes<N>& b) {
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

// Where the elements are: index i (in elements, or in packs for N > 1) and its column
// `col` (the index into a row input); the second pair for two packs (N = 2 kPack).
struct At {
  int64_t i, col, i2 = 0, col2 = 0;
};
__device__ __forceinline__ bool is_row(const EwArgs& p, int j) { return (p.row_inputs >> j) & 1u; }
template <DType D, int N>
__device__ __forceinline__ Lanes<N> ew_load(const EwArgs& p, int j, const At& at) {
  const Store<D>* in = static_cast<const Store<D>*>(p.in[j]);
  const bool row = is_row(p, j);
  Lanes<N> r;
  if constexpr (N == 1) {
    r.v[0] = load<D>(in, row ? at.col : at.i);
  } else {
    load_pack<D>(in, row ? at.col : at.i, r.v);
    if constexpr (N == 2 * kPack<D>) load_pack<D>(in, row ? at.col2 : at.i2, r.v + kPack<D>);
  }
  return r;
}

template <DType D, int N>
__device__ __forceinline__ Lanes<N> ew_run(const EwArgs& p, const At& at) {
  Lanes<N> acc{};
  for (int k = 0; k < p.size; ++k) {
    const EwStep s = p.code[k];
    const Lanes<N> a = s.a < p.inputs ? ew_load<D, N>(p, s.a, at) : acc;
    const Lanes<N> b = !s.binary ? a : s.b < p.inputs ? ew_load<D, N>(p, s.b, at) : acc;
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

// Packs of every input and the output; the row inputs then need cols % kPack == 0.
template <DType D>
__global__ void fused_ew_vec_kernel(const __grid_constant__ EwArgs p, int64_t nv) {
  pdl::prologue();
  constexpr int W = kPack<D>;
  Store<D>* out = static_cast<Store<D>*>(p.out);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  Column c = first_column(p, tid, stride, p.cols / W);
  int64_t i = tid;
  for (; i + stride < nv; i += 2 * stride) {
    const int64_t col2 = c.next(c.col);
    const Lanes<2 * W> r = ew_run<D, 2 * W>(p, At{i, c.col, i + stride, col2});
    store_pack<D>(out, i, r.v);
    store_pack<D>(out, i + stride, r.v + W);
    c.col = c.next(col2);
  }
  if (i < nv) store_pack<D>(out, i, ew_run<D, W>(p, At{i, c.col}).v);
  const int64_t t = W * nv + tid;  // the tail of fewer than a pack, by the first threads
  if (t < p.n) store<D>(out, t, ew_run<D, 1>(p, At{t, p.row_inputs ? t % p.cols : 0}).v[0]);
}

template <DType D>
__global__ void fused_ew_scalar_kernel(const __grid_constant__ EwArgs p) {
  pdl::prologue();
  Store<D>* out = static_cast<Store<D>*>(p.out);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  Column c = first_column(p, tid, stride, p.cols);
  for (int64_t i = tid; i < p.n; i += stride, c.col = c.next(c.col))
    store<D>(out, i, ew_run<D, 1>(p, At{i, c.col}).v[0]);
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
  bool aligned = aligned16(p.out);
  for (int j = 0; j < c.num_inputs; ++j) {
    p.in[j] = c.input(j).data;
    if (c.input(j).shape.numel() != p.n) p.row_inputs |= 1u << j;
    aligned = aligned && aligned16(p.in[j]);
  }
  for (int k = 0; k < prog.size(); ++k) {
    const EwInstr& in = prog.code[static_cast<size_t>(k)];
    p.code[k] = {static_cast<uint8_t>(in.op), in.a, in.b, static_cast<uint8_t>(ew_op_binary(in.op)), in.alpha};
  }
  if (p.n <= 0) return;
  detail::with_dtype(c.out.dtype, [&](auto d) {
    constexpr DType D = decltype(d)::value;
    constexpr int W = detail::kPack<D>;
    if (aligned && p.n > detail::kSmallElements && (p.row_inputs == 0 || p.cols % W == 0)) {
      const int64_t nv = p.n / W;
      const int64_t work = nv > (p.n - W * nv) ? nv : (p.n - W * nv);
      const int block = detail::block_for(work);
      detail::launch(TG_LAUNCH_SITE, fused_ew_vec_kernel<D>, grid_for(work, block), block, s, p, nv);
    } else {
      const int block = detail::block_for(p.n);
      detail::launch(TG_LAUNCH_SITE, fused_ew_scalar_kernel<D>, grid_for(p.n, block), block, s, p);
    }
  });
}

void add(const void* a, const void* b, void* y, int64_t n, cudaStream_t s, DType dt) {
  launch_ew<true>(AddF{}, a, b, y, n, dt, s);
}
void sub(const void* a, const void* b, void* y, int64_t n, cudaStream_t s, DType dt) {
  launch_ew<true>(SubF{}, a, b, y, n, dt, s);
}
void mul(const void* a, const void* b, void* y, int64_t n, cudaStream_t s, DType dt) {
  launch_ew<true>(MulF{}, a, b, y, n, dt, s);
}
void scale(const void* x, float alpha, void* y, int64_t n, cudaStream_t s, DType dt) {
  launch_ew<false>(ScaleF{alpha}, x, nullptr, y, n, dt, s);
}
void copy(const void* x, void* y, int64_t n, cudaStream_t s, DType dt) {
  if (x == y || n <= 0) return;
  TG_CUDA_CHECK(cudaMemcpyAsync(y, x, static_cast<size_t>(n) * dtype_size(dt), cudaMemcpyDeviceToDevice, s));
}
void cast(const TensorView& x, const TensorView& y, cudaStream_t s) {
  const int64_t n = x.shape.numel();
  if (n <= 0) return;
  if (x.dtype == y.dtype) {
    TG_CUDA_CHECK(cudaMemcpyAsync(y.data, x.data, static_cast<size_t>(n) * dtype_size(x.dtype),
                                  cudaMemcpyDeviceToDevice, s));
    return;
  }
  if (dtype_is_int(x.dtype) || dtype_is_int(y.dtype)) return cast_ints(x, y, s);
  const void* in = x.data;
  void* out = y.data;
  detail::with_dtype(x.dtype, [&](auto from) {
    detail::with_dtype(y.dtype, [&](auto to) {
      constexpr DType F = decltype(from)::value, T = decltype(to)::value;
      const auto* src = static_cast<const Store<F>*>(in);
      auto* dst = static_cast<Store<T>*>(out);
      if (aligned16(in) && aligned16(out) && n >= 8)
        detail::launch(TG_LAUNCH_SITE, cast_vec_kernel<F, T>, grid_for(n / 8), kBlock, s, src, dst, n);
      else
        detail::launch(TG_LAUNCH_SITE, cast_kernel<F, T>, grid_for(n), kBlock, s, src, dst, n);
    });
  });
}
void fill(float* y, float value, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  detail::launch(TG_LAUNCH_SITE, fill_kernel, grid_for(aligned16(y) ? n / 4 + 4 : n), kBlock, s, y, value, n);
}

void where(const OpCall& c, cudaStream_t s) {
  const Shape& out = c.out.shape;
  const int64_t n = out.numel();
  if (n <= 0) return;
  WhereIndex w{};
  w.rank = out.rank;
  for (int d = 0; d < out.rank; ++d) w.dims[d] = out[d];
  for (int k = 0; k < 3; ++k) {
    const auto st = broadcast_strides(c.in[static_cast<size_t>(k)].shape, out);
    for (int d = 0; d < out.rank; ++d) w.strides[k][d] = st[static_cast<size_t>(d)];
  }
  detail::with_dtype(c.out.dtype, [&](auto dt) {
    constexpr DType D = decltype(dt)::value;
    detail::launch(TG_LAUNCH_SITE, where_kernel<D>, grid_for(n), kBlock, s, static_cast<const void*>(c.in[0].data),
                   c.in[0].dtype, static_cast<const Store<D>*>(static_cast<const void*>(c.in[1].data)),
                   static_cast<const Store<D>*>(static_cast<const void*>(c.in[2].data)),
                   static_cast<Store<D>*>(static_cast<void*>(c.out.data)), w, n);
  });
}

}  // namespace tg::kernels::cuda
