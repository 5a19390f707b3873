// layernorm_grad_gamma_beta and layernorm_grad_gamma (kernels/cpu/layernorm.cpp):
// dgamma[j] = sum over rows r of dy[r, j] * xhat[r, j], dbeta[j] = sum over rows of dy[r, j].
//
// Rows of up to 4096 columns: one pass over dy and x. A block owns whole rows, so each
// row's mean and rstd come from the x it holds in registers (two-pass, like layernorm),
// and each thread adds dy * xhat (and dy) for its 4 or 8 columns into double sums.
// The order is fixed by row positions only (padding-exact, reduce.cuh): rows in tiles of
// TL (a function of cols), tile u in group u mod 256 (128 past 2048 columns), one group
// per block; in a block, T / G row slots side by side each take RT consecutive rows of a
// tile and sum them tile after tile; the slots are added in order; ln_finish_kernel adds
// the group sums in finish_kernel's order. Rows wider than 4096: a row-statistics pass
// into scratch and the column frame of reduce.cuh over dy * xhat (and over dy), which
// reads x twice.
//
// Floor, n = rows * cols: 8n bytes read (dy and x once); the outputs and the partial
// sums (16 bytes per column and group, 4 MiB at 1024 columns, mostly L2) are small.
// 256 blocks of 256 threads at [rows, 1024], two per SM. Per 8-row tile a thread
// spends ~600 instructions (64 of them float->double conversions, the slowest) and
// barriers, so the loop is issue-bound at 2 blocks per SM; the shape of the kernel
// follows from that:
//  - The grid stays a block per group: a group's rows are one chain of double adds per
//    column, which no split into more blocks can keep bit for bit, and at 1024 columns
//    256 groups of 256 threads fill two blocks per SM already; so the work per element
//    has to shrink instead.
//  - A slot's rows of a tile go in two steps, the next step's loads issued before the
//    current one's statistics, so loads stay in flight through the barriers and the
//    conversions (the same 64 floats of registers).
//  - A slot's row sums of x and of the squared deviations are added once per row by one
//    lane per row of the step and passed on by shuffle, where every thread would re-add
//    them from shared memory (2 x 8 loads and adds per row and thread at 1024 columns).
//  - Group sums go to part group-major, a thread's 4 columns in 32 contiguous bytes, and
//    ln_finish_kernel adds them with every thread loading, rather than a warp per output
//    with a few lanes loading and 32 serial shuffles.
// CHANGELOG.md has the measurements; dev/cuda/colreduce_variants.cu keeps the simpler
// loops this one replaced and checks that all give the same bits.
// Every float dtype: E is the element type of x and the outputs (storage.h), D that of dy
// (E's, or bf16 / f16 beside f32: graph/op.h kTypeLowGrad); the sums are f32's and each
// output rounds once from the float that f32 would store.
#include <cuda_runtime.h>

#include <fmt/format.h>

#include <stdexcept>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/reduce.cuh"

namespace tg::kernels::cuda {

namespace {

using namespace detail;

constexpr int64_t kLnMaxCols = 4096;

// D: dy's element type, E's or a 16-bit one beside f32 (widened exactly on load).
template <typename E, typename D = E>
struct LnArgs {
  const D* dy;
  const E* x;
  E* dgamma;
  E* dbeta;       // null: dgamma only
  double* part;   // null: one group, the block writes the outputs
  int64_t rows, cols;
  float eps, inv_cols;
  int nq;  // chunks of 4 columns: ceil(cols / 4)
  int G;   // threads per row, a power of two from 32 to the block size
  int tl;  // rows per tile: (threads / G) * RT
  int ng;  // groups in use: min(groups, tiles)
};

// Warp sums of N values per lane at once (N a power of two up to 32): each exchange step
// halves the values a lane carries, N - 1 + 5 - log2(N) shuffles in all instead of 5 N.
// Returns, on lane l, the warp total of value l / (32 / N), by a fixed tree.
template <int N>
__device__ __forceinline__ float multi_warp_sum(float (&v)[N], int lane) {
  int n = N;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    if (n > 1) {
      const bool upper = (lane & o) != 0;
#pragma unroll
      for (int i = 0; i < n / 2; ++i) {
        const float send = upper ? v[i] : v[i + n / 2];
        const float keep = upper ? v[i + n / 2] : v[i];
        v[i] = keep + __shfl_xor_sync(0xffffffffu, send, o);
      }
      n /= 2;
    } else {
      v[0] += __shfl_xor_sync(0xffffffffu, v[0], o);
    }
  }
  return v[0];
}

// Block of T threads; NV chunks of 4 columns per thread; RT = 8 / NV rows per slot and
// tile keeps 64 floats of inputs per thread. With 8 NV double accumulators and the
// addresses that is ~120 registers: T = 256 runs two blocks per SM (one computes while
// the other's loads are in flight), T = 512 (rows of 2049..4096 columns) one.
// A slot's RT rows of a tile go in two steps of RT / 2, the next step's loads issued
// before the current step is computed. A slot's row sums are added by one lane per row
// of the step and passed to the others by shuffle. Group sums go to part group-major
// (part[g * outputs + k]), which ln_finish_kernel reads.
template <int T, int NV, bool kVec, typename E, typename D>
__global__ void __launch_bounds__(T, 512 / T) ln_params_kernel(LnArgs<E, D> a) {
  pdl::prologue();
  constexpr int RT = 8 / NV;
  constexpr int RS = RT / 2;  // rows per step
  constexpr int kGroups = T == 256 ? 256 : 128;
  __shared__ float red[2][RS][T / 32];             // per-warp row sums: of x, then of (x - mean)^2
  __shared__ double comb[2][NV == 1 ? 2 * T : 1];  // slot sums when slots share a block (G <= T / 2)
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const int h = t / a.G, tr = t % a.G;  // row slot, thread within the row
  const int wps = a.G / 32, w0 = h * wps;
  const bool beta = a.dbeta != nullptr;
  int64_t c0[NV];
  bool cv[NV][4];
#pragma unroll
  for (int m = 0; m < NV; ++m) {
    const int q = tr + a.G * m;
    c0[m] = 4 * static_cast<int64_t>(q);
#pragma unroll
    for (int i = 0; i < 4; ++i) cv[m][i] = q < a.nq && c0[m] + i < a.cols;
  }
  // The step's rows: the lanes l with l % (32 / RS) == 0 of each warp publish row l / (32 / RS).
  const bool publisher = lane % (32 / RS) == 0;
  const int prow = lane / (32 / RS);
  auto slot_sum = [&](const float (&w)[T / 32]) {  // a fixed trip count: no loop branches
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < T / 32; ++k)
      if (k < wps) s += w[w0 + k];
    return s;
  };
  double ag[NV][4] = {}, ab[NV][4] = {};
  // Rows rb .. rb + RS - 1 of the slot's columns; rows past the end are 0.
  auto load_rows = [&](int64_t rb, float (&xv)[RS][NV][4], float (&gv)[RS][NV][4]) {
#pragma unroll
    for (int ri = 0; ri < RS; ++ri) {
      const bool rok = rb + ri < a.rows;
      const E* xr = a.x + (rb + ri) * a.cols;
      const D* gr = a.dy + (rb + ri) * a.cols;
#pragma unroll
      for (int m = 0; m < NV; ++m) {
        if constexpr (kVec) {
          float4 u = make_float4(0.0f, 0.0f, 0.0f, 0.0f), v = u;
          if (rok && cv[m][0]) {
            u = load4_wide(xr + c0[m]);
            v = load4_wide(gr + c0[m]);
          }
          xv[ri][m][0] = u.x, xv[ri][m][1] = u.y, xv[ri][m][2] = u.z, xv[ri][m][3] = u.w;
          gv[ri][m][0] = v.x, gv[ri][m][1] = v.y, gv[ri][m][2] = v.z, gv[ri][m][3] = v.w;
        } else {
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const bool ok = rok && cv[m][i];
            xv[ri][m][i] = ok ? static_cast<float>(xr[c0[m] + i]) : 0.0f;
            gv[ri][m][i] = ok ? static_cast<float>(gr[c0[m] + i]) : 0.0f;
          }
        }
      }
    }
  };
  // The statistics of rows rb .. rb + RS - 1 and their terms added to ag and ab; two
  // barriers, so every thread of the block calls it equally often.
  auto add_rows = [&](int64_t rb, float (&xv)[RS][NV][4], const float (&gv)[RS][NV][4]) {
    // Mean: per thread (c0 + c1) + (c2 + c3) per chunk, the warp tree, the slot's warps in
    // order. multi_warp_sum's tree (xor 16, 8, ..., 1) does not depend on RS.
    float s[RS], mean[RS], rstd[RS];
#pragma unroll
    for (int ri = 0; ri < RS; ++ri) {
      s[ri] = 0.0f;
#pragma unroll
      for (int m = 0; m < NV; ++m) s[ri] += (xv[ri][m][0] + xv[ri][m][1]) + (xv[ri][m][2] + xv[ri][m][3]);
    }
    const float ws = multi_warp_sum<RS>(s, lane);
    if (publisher) red[0][prow][warp] = ws;
    __syncthreads();
    // A warp lies in one slot (G >= 32), so every lane's slot_sum is its slot's. The sum is
    // passed, not the mean, so that the compiler still contracts the mean's product into
    // x - mean (one rounding), as it does for a mean computed in the thread; a product
    // rounded before the shuffle would change the bits.
    const float row_sum = slot_sum(red[0][lane % RS]);
#pragma unroll
    for (int ri = 0; ri < RS; ++ri) mean[ri] = __shfl_sync(0xffffffffu, row_sum, ri) * a.inv_cols;
    // Variance of the deviations (columns past the row count as 0), kept in xv.
#pragma unroll
    for (int ri = 0; ri < RS; ++ri) {
      s[ri] = 0.0f;
#pragma unroll
      for (int m = 0; m < NV; ++m)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float d = cv[m][i] ? xv[ri][m][i] - mean[ri] : 0.0f;
          xv[ri][m][i] = d;
          s[ri] += d * d;
        }
    }
    const float wq = multi_warp_sum<RS>(s, lane);
    if (publisher) red[1][prow][warp] = wq;
    // red[0] and red[1] alternate, so one barrier per reduction: the next step writes
    // red[0] only after every thread has passed this barrier, i.e. read its means.
    __syncthreads();
    const float row_sq = slot_sum(red[1][lane % RS]);
#pragma unroll
    for (int ri = 0; ri < RS; ++ri) rstd[ri] = rsqrtf(__shfl_sync(0xffffffffu, row_sq, ri) * a.inv_cols + a.eps);
#pragma unroll
    for (int ri = 0; ri < RS; ++ri) {
      if (rb + ri >= a.rows) continue;
#pragma unroll
      for (int m = 0; m < NV; ++m)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          ag[m][i] += static_cast<double>(gv[ri][m][i] * (xv[ri][m][i] * rstd[ri]));
          if (beta) ab[m][i] += static_cast<double>(gv[ri][m][i]);
        }
    }
  };
  // The loops run over tiles, the same count for every thread: the barriers need it.
  const int64_t stride = int64_t{kGroups} * a.tl;
  int64_t rb = static_cast<int64_t>(blockIdx.x) * a.tl + static_cast<int64_t>(h) * RT;
  float xa[RS][NV][4], ga[RS][NV][4], xb[RS][NV][4], gb[RS][NV][4];
  if (static_cast<int64_t>(blockIdx.x) * a.tl < a.rows) {
    load_rows(rb, xa, ga);
    for (int64_t t0 = static_cast<int64_t>(blockIdx.x) * a.tl;; t0 += stride, rb += stride) {
      load_rows(rb + RS, xb, gb);
      add_rows(rb, xa, ga);
      const bool next = t0 + stride < a.rows;
      if (next) load_rows(rb + stride, xa, ga);
      add_rows(rb + RS, xb, gb);
      if (!next) break;
    }
  }
  // Slots in order (several only with NV == 1: G <= T / 2).
  if constexpr (NV == 1) {
    const int slots = T / a.G;
    if (slots > 1) {
      for (int k = 0; k < slots; ++k) {
        if (h == k) {
#pragma unroll
          for (int i = 0; i < 4; ++i)
            if (cv[0][i]) {
              double* cg = &comb[0][c0[0] + i];
              double* cb = &comb[1][c0[0] + i];
              *cg = k == 0 ? ag[0][i] : *cg + ag[0][i];
              *cb = k == 0 ? ab[0][i] : *cb + ab[0][i];
            }
        }
        __syncthreads();
      }
      if (h == 0) {
#pragma unroll
        for (int i = 0; i < 4; ++i)
          if (cv[0][i]) {
            ag[0][i] = comb[0][c0[0] + i];
            ab[0][i] = comb[1][c0[0] + i];
          }
      }
    }
  }
  if (h != 0) return;
#pragma unroll
  for (int m = 0; m < NV; ++m)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if (!cv[m][i]) continue;
      const int64_t c = c0[m] + i;
      if (a.part) {
        double* pg = a.part + static_cast<int64_t>(blockIdx.x) * (beta ? 2 * a.cols : a.cols);
        pg[c] = ag[m][i];
        if (beta) pg[a.cols + c] = ab[m][i];
      } else {
        a.dgamma[c] = narrow<E>(static_cast<float>(ag[m][i]));
        if (beta) a.dbeta[c] = narrow<E>(static_cast<float>(ab[m][i]));
      }
    }
}

// layernorm_grad_gamma's wide rows: dy * xhat with the row's (mean, rstd) from the stats pass.
template <typename E, typename D>
struct DyXhatLoad {
  const D* dy;
  const E* x;
  const float* stats;  // indexed by the row
  __device__ float at(int64_t i, int64_t r) const {
    return static_cast<float>(dy[i]) * ((static_cast<float>(x[i]) - stats[2 * r]) * stats[2 * r + 1]);
  }
  __device__ float4 at4(int64_t i, int64_t r) const {
    const float4 d = load4_wide(dy + i), v = load4_wide(x + i);
    const float m = stats[2 * r], s = stats[2 * r + 1];
    return make_float4(d.x * ((v.x - m) * s), d.y * ((v.y - m) * s), d.z * ((v.z - m) * s), d.w * ((v.w - m) * s));
  }
};

// Rows in chunks whose statistics fit the scratch (1M rows per 8 MiB); later chunks add
// onto dgamma. Chunk boundaries are multiples of `chunk`, so padding stays exact. A 16-bit
// dgamma over several chunks adds them in f32 at the head of the scratch instead, rounded
// once at the end by a cast; its chunks are then shorter than f32's, so only there its sums
// differ from f32's in order (within f32's tolerance).
template <typename E, typename D>
void grad_params_wide(const D* dy, const E* x, E* dgamma, E* dbeta, int64_t rows, int64_t cols, float eps,
                      float* scratch, size_t scratch_bytes, cudaStream_t s) {
  const bool acc = !std::is_same_v<E, float> && rows > static_cast<int64_t>(scratch_bytes / (2 * sizeof(float)));
  const size_t acc_bytes = acc ? static_cast<size_t>((cols + 3) / 4 * 4) * sizeof(float) : 0;  // 16-byte multiple
  const int64_t chunk =
      scratch_bytes > acc_bytes ? static_cast<int64_t>((scratch_bytes - acc_bytes) / (2 * sizeof(float))) : 0;
  if (!scratch || chunk < 1)
    throw std::invalid_argument(fmt::format(
        "run_cuda layernorm_grad_gamma: rows of {} columns need a scratch buffer of at least 8 bytes per row "
        "({} rows){}; pass CudaExecContext::scratch (the CUDA backend provides one)", cols, rows,
        acc ? fmt::format(" plus {} bytes for a 16-bit dgamma's f32 sums", acc_bytes) : std::string()));
  const bool vec = cols % 4 == 0 && aligned4(dy) && aligned4(x);
  if (dbeta) launch_reduce_cols(PlainLoadOf<D>{dy}, cols % 4 == 0 && aligned4(dy), dbeta, 1, rows, cols, 1.0, false,
                                scratch, scratch_bytes, s);
  float* stats = scratch + acc_bytes / sizeof(float);
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const int64_t n = rows - r0 < chunk ? rows - r0 : chunk;
    layernorm_row_stats(x + r0 * cols, stats, n, cols, eps, s);
    const DyXhatLoad<E, D> load{dy + r0 * cols, x + r0 * cols, stats};
    if (acc)
      launch_reduce_cols(load, vec, scratch, 1, n, cols, 1.0, r0 > 0, nullptr, 0, s);
    else
      launch_reduce_cols(load, vec, dgamma, 1, n, cols, 1.0, r0 > 0, nullptr, 0, s);
  }
  if (acc)
    cast(TensorView{scratch, Shape{cols}, DType::F32},
         TensorView{reinterpret_cast<float*>(dgamma), Shape{cols}, dtype_of<E>()}, s);
}

template <typename E, typename D>
auto ln_kernel(int threads, int nv, bool vec) {
  return threads == 512 ? (vec ? ln_params_kernel<512, 2, true, E, D> : ln_params_kernel<512, 2, false, E, D>)
         : nv == 1      ? (vec ? ln_params_kernel<256, 1, true, E, D> : ln_params_kernel<256, 1, false, E, D>)
                        : (vec ? ln_params_kernel<256, 2, true, E, D> : ln_params_kernel<256, 2, false, E, D>);
}

// The finish over part[g * n + k] (ln_params_kernel's group-major sums), in
// finish_kernel's order: run s adds groups 32s .. 32s + 31 in order, then the runs are
// added in order. A block takes kFinOutputs outputs; thread t adds run t / kFinOutputs of
// output t % kFinOutputs, so each load of a warp reads one run's 256 contiguous bytes and
// all 32 loads of a thread are in flight at once. 32 outputs a block is the fastest of
// 8 to 128 on [rows, 1024]. Runs past ng add +0.0 there, a no-op on a sum that is never
// -0.0, so stopping at nruns keeps the bits.
constexpr int kFinOutputs = 32;
constexpr int kFinRuns = 256 / kRun;  // at most 256 groups
template <typename E>
__global__ void __launch_bounds__(kFinRuns * kFinOutputs) ln_finish_kernel(const double* part, int ng, int64_t n,
                                                                           E* y0, int64_t n0, E* y1) {
  pdl::prologue();
  __shared__ double runs[kFinRuns][kFinOutputs];
  const int o = threadIdx.x % kFinOutputs, s = threadIdx.x / kFinOutputs;
  const int nruns = blockDim.x / kFinOutputs;
  const int64_t k = static_cast<int64_t>(blockIdx.x) * kFinOutputs + o;
  double run = 0.0;
  if (k < n) {
    const int g0 = s * kRun;
    double v[kRun];
#pragma unroll
    for (int j = 0; j < kRun; ++j) v[j] = g0 + j < ng ? part[(g0 + j) * n + k] : 0.0;
#pragma unroll
    for (int j = 0; j < kRun; ++j) run += v[j];
  }
  runs[s][o] = run;
  __syncthreads();
  if (s != 0 || k >= n) return;
  double total = 0.0;
  for (int j = 0; j < nruns; ++j) total += runs[j][o];
  // `+ 0.0f` as finish_kernel's (accumulate false): a tiny negative total rounds to -0.0f,
  // which it turns into +0.0f.
  store_sum(k < n0 ? y0 + k : y1 + (k - n0), total, 1.0, false);
}

int pow2_at_least(int64_t v) {
  int p = 1;
  while (p < v) p *= 2;
  return p;
}

template <typename E, typename D>
void layernorm_grad_gamma_beta_of(const D* dy, const E* x, E* dgamma, E* dbeta, int64_t rows, int64_t cols, float eps,
                                  float* scratch, size_t scratch_bytes, cudaStream_t s) {
  if (cols <= 0) return;
  if (rows <= 0) {
    if constexpr (std::is_same_v<E, float>) {
      fill(dgamma, 0.0f, cols, s);
      if (dbeta) fill(dbeta, 0.0f, cols, s);
    } else {  // +0.0 is all zero bits in both 16-bit formats
      TG_CUDA_CHECK(cudaMemsetAsync(dgamma, 0, static_cast<size_t>(cols) * sizeof(E), s));
      if (dbeta) TG_CUDA_CHECK(cudaMemsetAsync(dbeta, 0, static_cast<size_t>(cols) * sizeof(E), s));
    }
    return;
  }
  if (cols > kLnMaxCols) return grad_params_wide(dy, x, dgamma, dbeta, rows, cols, eps, scratch, scratch_bytes, s);
  // Rows up to 2048 wide: blocks of 256 threads, 256 groups; up to 4096: 512 and 128.
  // Either way the partial sums take at most 2 * 2048 * 256 * 8 B = 8 MiB.
  const int64_t nq = (cols + 3) / 4;
  const int threads = nq <= 512 ? 256 : 512;
  const int nv = nq <= 256 ? 1 : 2;
  const int groups = threads == 256 ? 256 : 128;
  LnArgs<E, D> a{dy, x, dgamma, dbeta, nullptr, rows, cols, eps, 1.0f / static_cast<float>(cols), static_cast<int>(nq),
              0, 0, 0};
  a.G = nv == 2 ? threads : pow2_at_least(nq < 32 ? 32 : nq);
  a.tl = (threads / a.G) * (8 / nv);
  const int64_t tiles = (rows + a.tl - 1) / a.tl;
  a.ng = static_cast<int>(tiles < groups ? tiles : groups);
  const int64_t outputs = cols * (dbeta ? 2 : 1);
  if (a.ng > 1) {
    const int64_t need = outputs * a.ng * static_cast<int64_t>(sizeof(double));
    if (!scratch || static_cast<int64_t>(scratch_bytes) < need)
      throw std::invalid_argument(fmt::format(
          "run_cuda layernorm_grad_gamma: {} rows of {} columns need a scratch buffer of {} bytes for their partial "
          "sums, got {}; pass CudaExecContext::scratch (the CUDA backend provides one)",
          rows, cols, need, scratch ? scratch_bytes : 0));
    a.part = reinterpret_cast<double*>(scratch);
  }
  const bool vec = cols % 4 == 0 && aligned4(dy) && aligned4(x);
  launch(TG_LAUNCH_SITE, ln_kernel<E, D>(threads, nv, vec), a.ng, threads, s, a);
  if (a.part)
    launch(TG_LAUNCH_SITE, ln_finish_kernel<E>, static_cast<int>((outputs + kFinOutputs - 1) / kFinOutputs),
           kFinOutputs * ((a.ng + kRun - 1) / kRun), s, static_cast<const double*>(a.part), a.ng, outputs, dgamma, cols,
           dbeta);
}

}  // namespace

void layernorm_grad_gamma_beta(const float* dy, const float* x, float* dgamma, float* dbeta, int64_t rows,
                               int64_t cols, float eps, float* scratch, size_t scratch_bytes, cudaStream_t s) {
  layernorm_grad_gamma_beta_of(dy, x, dgamma, dbeta, rows, cols, eps, scratch, scratch_bytes, s);
}

void layernorm_grad_gamma(const float* dy, const float* x, float* dgamma, int64_t rows, int64_t cols, float eps,
                          float* scratch, size_t scratch_bytes, cudaStream_t s) {
  layernorm_grad_gamma_beta(dy, x, dgamma, nullptr, rows, cols, eps, scratch, scratch_bytes, s);
}

void layernorm_params_op(const OpCall& c, const CallGeometry& g, const CudaExecContext& ctx) {
  with_low_grad_types(c.out.dtype, c.in[0].dtype, [&](auto e, auto d) {
    using E = decltype(e);
    using D = decltype(d);
    E* dbeta = c.op == OpKind::layernorm_grad_params ? elements<E>(c.out2.data) : nullptr;
    layernorm_grad_gamma_beta_of(elements<const D>(c.in[0].data), elements<const E>(c.in[1].data),
                                 elements<E>(c.out.data), dbeta, g.rows, g.cols, c.attrs->eps, ctx.scratch,
                                 ctx.scratch_bytes, ctx.stream);
  });
}

}  // namespace tg::kernels::cuda
