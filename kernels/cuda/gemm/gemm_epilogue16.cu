#include "kernels/cuda/gemm/gemm_epilogue16.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "graph/float_formats.h"
#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/launch.cuh"

namespace tg::kernels::cuda {

namespace {

// The two 16-bit formats, converted by graph/float_formats.h's code (the CPU reference's).
struct Bf16 {
  __device__ static float load(const uint16_t* p, int64_t i) { return f32_from_bf16(p[i]); }
  __device__ static void store(uint16_t* p, int64_t i, float v) { p[i] = bf16_from_f32(v); }
};
struct F16 {
  __device__ static float load(const uint16_t* p, int64_t i) { return f32_from_f16(p[i]); }
  __device__ static void store(uint16_t* p, int64_t i, float v) { p[i] = f16_from_f32(v); }
};

template <typename Fmt, typename Grad>
__global__ void act_grad_kernel(uint16_t* d, const uint16_t* act_in, int64_t n) {
  pdl::prologue();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    Fmt::store(d, i, Grad()(Fmt::load(d, i), Fmt::load(act_in, i)));
}

// The same, 8 elements (16 bytes) a thread, for 16-byte aligned operands: a GELU layer's
// gradient reads and writes tens of MB, which scalar 2-byte accesses move at half the rate.
template <typename Fmt, typename Grad>
__global__ void act_grad_vec_kernel(uint16_t* d, const uint16_t* act_in, int64_t n) {
  pdl::prologue();
  union Vec {
    uint4 u;
    uint16_t h[8];
  };
  const int64_t vectors = n / 8;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t v = first; v < vectors; v += stride) {
    Vec x, a;
    x.u = reinterpret_cast<const uint4*>(d)[v];
    a.u = reinterpret_cast<const uint4*>(act_in)[v];
#pragma unroll
    for (int k = 0; k < 8; ++k) Fmt::store(x.h, k, Grad()(Fmt::load(x.h, k), Fmt::load(a.h, k)));
    reinterpret_cast<uint4*>(d)[v] = x.u;
  }
  for (int64_t i = vectors * 8 + first; i < n; i += stride) Fmt::store(d, i, Grad()(Fmt::load(d, i), Fmt::load(act_in, i)));
}

template <typename Fmt, typename Grad>
void launch_act_grad(void* d, const void* act_in, int64_t n, cudaStream_t s) {
  const bool vec = reinterpret_cast<uintptr_t>(d) % 16 == 0 && reinterpret_cast<uintptr_t>(act_in) % 16 == 0;
  if (vec) {
    detail::launch(TG_LAUNCH_SITE, act_grad_vec_kernel<Fmt, Grad>,
                   dim3(static_cast<unsigned>(detail::grid_for((n + 7) / 8))), dim3(detail::kBlock), s,
                   static_cast<uint16_t*>(d), static_cast<const uint16_t*>(act_in), n);
    return;
  }
  detail::launch(TG_LAUNCH_SITE, act_grad_kernel<Fmt, Grad>, dim3(static_cast<unsigned>(detail::grid_for(n))),
                 dim3(detail::kBlock), s, static_cast<uint16_t*>(d), static_cast<const uint16_t*>(act_in), n);
}

// Column sums of dz [rows, cols], split over the device: block (cb, s) takes columns
// 256 cb .. 256 cb + 255 (8 adjacent ones a thread, so that a warp reads 512 contiguous bytes
// of a row) of the row run s; lane y of 8 sums rows s L + y, s L + y + 8, ... in order, the
// lanes are added in lane order, and the runs' partial sums (in scratch) are added in run
// order by a second kernel, so the order is fixed by the shape and the split alone.
constexpr int kColThreads = 32, kColsPerThread = 8, kRowLanes = 8;
constexpr int kColsPerBlock = kColThreads * kColsPerThread;

struct ColumnSplit {
  int64_t runs = 1, run = 0;  // row runs and their length
};

ColumnSplit column_split(int64_t rows, int64_t cols, size_t scratch_floats) {
  const int64_t col_blocks = (cols + kColsPerBlock - 1) / kColsPerBlock;
  const int64_t want = std::max<int64_t>(1, (static_cast<int64_t>(detail::sm_count()) * 2 + col_blocks - 1) / col_blocks);
  const int64_t longest = std::max<int64_t>(1, rows / 128);  // at least 16 rows a lane
  const int64_t fit = std::max<int64_t>(1, static_cast<int64_t>(scratch_floats) / std::max<int64_t>(cols, 1));
  ColumnSplit sp;
  sp.runs = std::min({want, longest, fit});
  sp.run = (rows + sp.runs - 1) / sp.runs;
  return sp;
}

template <typename Fmt>
__global__ void __launch_bounds__(kColThreads* kRowLanes) column_partials_kernel(const uint16_t* dz, float* partials,
                                                                                 uint16_t* out, int64_t rows,
                                                                                 int64_t cols, ColumnSplit sp) {
  pdl::prologue();
  __shared__ float part[kRowLanes][kColsPerBlock];
  const int64_t c0 = static_cast<int64_t>(blockIdx.x) * kColsPerBlock + threadIdx.x * kColsPerThread;
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * sp.run;
  const int64_t end = begin + sp.run < rows ? begin + sp.run : rows;
  float acc[kColsPerThread];
#pragma unroll
  for (int k = 0; k < kColsPerThread; ++k) acc[k] = 0.0f;
  for (int64_t r = begin + threadIdx.y; r < end; r += kRowLanes)
#pragma unroll
    for (int k = 0; k < kColsPerThread; ++k)
      if (c0 + k < cols) acc[k] += Fmt::load(dz, r * cols + c0 + k);
#pragma unroll
  for (int k = 0; k < kColsPerThread; ++k) part[threadIdx.y][threadIdx.x * kColsPerThread + k] = acc[k];
  __syncthreads();
  // Thread (x, y) adds the lanes of column 8 x + y of the block.
  const int local = threadIdx.x * kColsPerThread + threadIdx.y;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kColsPerBlock + local;
  if (col >= cols) return;
  float total = part[0][local];
  for (int l = 1; l < kRowLanes; ++l) total += part[l][local];
  if (sp.runs == 1) Fmt::store(out, col, total);
  else partials[static_cast<int64_t>(blockIdx.y) * cols + col] = total;
}

template <typename Fmt>
__global__ void column_combine_kernel(const float* partials, uint16_t* out, int64_t cols, int64_t runs) {
  pdl::prologue();
  const int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= cols) return;
  float total = partials[col];
  for (int64_t s = 1; s < runs; ++s) total += partials[s * cols + col];
  Fmt::store(out, col, total);
}

template <typename Fmt>
void launch_column_sums(const void* dz, void* out, int64_t rows, int64_t cols, float* scratch, size_t scratch_floats,
                        cudaStream_t s) {
  const ColumnSplit sp = column_split(rows, cols, scratch ? scratch_floats : 0);
  const dim3 grid(static_cast<unsigned>((cols + kColsPerBlock - 1) / kColsPerBlock), static_cast<unsigned>(sp.runs));
  detail::launch(TG_LAUNCH_SITE, column_partials_kernel<Fmt>, grid, dim3(kColThreads, kRowLanes), s,
                 static_cast<const uint16_t*>(dz), scratch, static_cast<uint16_t*>(out), rows, cols, sp);
  if (sp.runs > 1)
    detail::launch(TG_LAUNCH_SITE, column_combine_kernel<Fmt>, dim3(static_cast<unsigned>((cols + 255) / 256)),
                   dim3(256), s, static_cast<const float*>(scratch), static_cast<uint16_t*>(out), cols, sp.runs);
}

void require_16bit(DType dt, const char* what) {
  if (dt == DType::F32) throw std::logic_error(std::string(what) + ": takes bf16 or f16 tensors, not f32");
}

}  // namespace

void act_grad_16bit(DType dt, Act act, void* d, const void* act_in, int64_t n, cudaStream_t s) {
  require_16bit(dt, "act_grad_16bit");
  if (act == Act::none || n <= 0) return;
  const bool bf16 = dt == DType::BF16;
  if (act == Act::relu)
    return bf16 ? launch_act_grad<Bf16, detail::ReluGradF>(d, act_in, n, s)
                : launch_act_grad<F16, detail::ReluGradF>(d, act_in, n, s);
  bf16 ? launch_act_grad<Bf16, detail::GeluGradF>(d, act_in, n, s)
       : launch_act_grad<F16, detail::GeluGradF>(d, act_in, n, s);
}

void column_sums_16bit(DType dt, const void* dz, void* out, int64_t rows, int64_t cols, float* scratch,
                       size_t scratch_bytes, cudaStream_t s) {
  require_16bit(dt, "column_sums_16bit");
  if (cols <= 0) return;
  const size_t floats = scratch_bytes / sizeof(float);
  dt == DType::BF16 ? launch_column_sums<Bf16>(dz, out, rows, cols, scratch, floats, s)
                    : launch_column_sums<F16>(dz, out, rows, cols, scratch, floats, s);
}

}  // namespace tg::kernels::cuda
