// add, sub, mul, scale, fill, copy, cast and where (kernels/cpu/elementwise.cpp), on the frame of
// elementwise.cuh, and fused_elementwise: a chain of those and the activations in one
// kernel, each step by the functor the unfused op runs, casts between f32 and bf16 or f16
// included. All but fill (f32) and cast run in every dtype of storage.h.
// The arithmetic uses __fadd_rn/__fmul_rn/... where the CPU reference is plain
// float math, so that nvcc cannot contract it into an FMA and the bits match.
#include <cuda_runtime.h>

#include <vector>

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
// value (acc); operands are that value or an input, loaded where it is read. The chain
// runs in f32 registers, and each instruction's result is rounded to its dtype
// (graph/ew_program.h) as the unfused op's store rounds it, the last by the output's store:
// the unfused chain's bits, in every dtype and across casts (a cast is that rounding alone).
// Two kernel families:
// - one dtype D for every input and result (every program without a cast): the loads and
//   the roundings are D's at compile time, and f32 has none;
// - f32 and one 16-bit dtype L (a program with casts): each input's dtype and each
//   result's rounding are bits of the launch parameters, uniform branches across the grid
//   as the row inputs are; the vector form reads 8 elements a step, one 16-byte pack of L
//   or two of f32.
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
  // The mixed kernels': bit j, input j is in L (else f32); bit k, instruction k's result
  // rounds to L (the last one's: the output's store does).
  unsigned low_inputs;
  uint32_t low_results[kMaxEwInstrs / 32];
};
static_assert(kMaxEwInputs <= 32 && kMaxEwInstrs % 32 == 0, "the bit sets of EwArgs hold every input and instruction");

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
    case EwOp::cast: return a;  // the rounding to its dtype follows, as for every instruction
  }
  return a;
}

// Each lane rounded to D and widened back: what the unfused op's store leaves in memory.
template <DType D, int N>
__device__ __forceinline__ Lanes<N> round_to(const Lanes<N>& x) {
  Lanes<N> r;
#pragma unroll
  for (int k = 0; k < N; ++k) r.v[k] = detail::Elem<D>::wide(detail::Elem<D>::narrow(x.v[k]));
  return r;
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
    if constexpr (D != DType::F32) {
      if (k + 1 < p.size) acc = round_to<D>(acc);
    }
  }
  return acc;
}

// The mixed kernels' operands: N = 8 (i and col count 8-element groups) or 1 (elements).
template <DType L, int N>
__device__ __forceinline__ Lanes<N> ew_load_mixed(const EwArgs& p, int j, const At& at) {
  const int64_t i = is_row(p, j) ? at.col : at.i;
  Lanes<N> r;
  if ((p.low_inputs >> j) & 1u) {
    const Store<L>* in = static_cast<const Store<L>*>(p.in[j]);
    if constexpr (N == 1) r.v[0] = load<L>(in, i);
    else load_pack<L>(in, i, r.v);
  } else {
    const float* in = static_cast<const float*>(p.in[j]);
    if constexpr (N == 1) {
      r.v[0] = in[i];
    } else {
      load_pack<DType::F32>(in, 2 * i, r.v);
      load_pack<DType::F32>(in, 2 * i + 1, r.v + 4);
    }
  }
  return r;
}

template <DType L, int N>
__device__ __forceinline__ Lanes<N> ew_run_mixed(const EwArgs& p, const At& at) {
  static_assert(N == 1 || N == kPack<L>, "a group is one element or one pack of L");
  Lanes<N> acc{};
  for (int k = 0; k < p.size; ++k) {
    const EwStep s = p.code[k];
    const Lanes<N> a = s.a < p.inputs ? ew_load_mixed<L, N>(p, s.a, at) : acc;
    const Lanes<N> b = !s.binary ? a : s.b < p.inputs ? ew_load_mixed<L, N>(p, s.b, at) : acc;
    acc = ew_apply(s, a, b);
    if ((p.low_results[k >> 5] >> (k & 31)) & 1u) acc = round_to<L>(acc);
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

// One element a step, for either family: a program of one dtype L (= Out), or (Mixed)
// of f32 and L.
template <DType L, DType Out, bool Mixed>
__global__ void fused_ew_scalar_kernel(const __grid_constant__ EwArgs p) {
  pdl::prologue();
  Store<Out>* out = static_cast<Store<Out>*>(p.out);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  Column c = first_column(p, tid, stride, p.cols);
  for (int64_t i = tid; i < p.n; i += stride, c.col = c.next(c.col)) {
    if constexpr (Mixed) store<Out>(out, i, ew_run_mixed<L, 1>(p, At{i, c.col}).v[0]);
    else store<Out>(out, i, ew_run<L, 1>(p, At{i, c.col}).v[0]);
  }
}

// Groups of 8 elements: every input and the output 16-byte aligned, the row inputs then
// cols % 8 == 0; the tail of fewer than 8 by the first threads.
template <DType L, DType Out>
__global__ void fused_ew_mixed_vec_kernel(const __grid_constant__ EwArgs p, int64_t groups) {
  pdl::prologue();
  constexpr int G = kPack<L>;
  Store<Out>* out = static_cast<Store<Out>*>(p.out);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  Column c = first_column(p, tid, stride, p.cols / G);
  for (int64_t i = tid; i < groups; i += stride, c.col = c.next(c.col)) {
    const Lanes<G> r = ew_run_mixed<L, G>(p, At{i, c.col});
    if constexpr (Out == DType::F32) {
      store_pack<Out>(out, 2 * i, r.v);
      store_pack<Out>(out, 2 * i + 1, r.v + 4);
    } else {
      store_pack<Out>(out, i, r.v);
    }
  }
  const int64_t t = G * groups + tid;
  if (t < p.n) store<Out>(out, t, ew_run_mixed<L, 1>(p, At{t, p.row_inputs ? t % p.cols : 0}).v[0]);
}

// A program over f32 and L whose output is Out (f32 or L).
template <DType L, DType Out>
void launch_mixed(const EwArgs& p, bool aligned, cudaStream_t s) {
  constexpr int G = kPack<L>;
  if (aligned && p.n > detail::kSmallElements && (p.row_inputs == 0 || p.cols % G == 0)) {
    const int64_t groups = p.n / G;
    const int64_t work = groups > (p.n - G * groups) ? groups : (p.n - G * groups);
    const int block = detail::block_for(work);
    detail::launch(TG_LAUNCH_SITE, fused_ew_mixed_vec_kernel<L, Out>, grid_for(work, block), block, s, p, groups);
  } else {
    const int block = detail::block_for(p.n);
    detail::launch(TG_LAUNCH_SITE, fused_ew_scalar_kernel<L, Out, true>, grid_for(p.n, block), block, s, p);
  }
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
  // The dtypes: one for all (the kernels of D), or f32 and L (check_op_call refused others).
  std::vector<DType> in_dtypes(static_cast<size_t>(c.num_inputs)), results;
  for (int j = 0; j < c.num_inputs; ++j) in_dtypes[static_cast<size_t>(j)] = c.input(j).dtype;
  ew_program_dtypes(prog, in_dtypes, &results);
  DType low = DType::F32;
  bool one_dtype = true;
  for (int j = 0; j < c.num_inputs; ++j) {
    const DType d = in_dtypes[static_cast<size_t>(j)];
    one_dtype = one_dtype && d == c.out.dtype;
    if (d == DType::F32) continue;
    low = d;
    p.low_inputs |= 1u << j;
  }
  for (int k = 0; k < prog.size(); ++k) {
    const DType d = results[static_cast<size_t>(k)];
    one_dtype = one_dtype && d == c.out.dtype;
    if (d == DType::F32) continue;
    low = d;
    if (k + 1 < prog.size()) p.low_results[k / 32] |= 1u << (k % 32);
  }
  if (!one_dtype) {
    detail::with_dtype(low, [&](auto l) {
      constexpr DType L = decltype(l)::value;
      if constexpr (L != DType::F32) {
        if (c.out.dtype == DType::F32) launch_mixed<L, DType::F32>(p, aligned, s);
        else launch_mixed<L, L>(p, aligned, s);
      }
    });
    return;
  }
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
      detail::launch(TG_LAUNCH_SITE, fused_ew_scalar_kernel<D, D, false>, grid_for(p.n, block), block, s, p);
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
