// How fast can any kernel sum the columns of tg-kernels' 64 MiB case ([16384, 1024] fp32)?
// reduce_sum_cols (kernels/cuda/reduce.cuh) pays a few microseconds of fixed cost there
// against a device copy of the same bytes, more than the copy does. Its sums run in
// double in a fixed order (chains of 64 rows per column, block partials, the tile's last
// block adding them). This probe times kernels without those constraints on the same
// data, to tell whether the fixed cost is the order's or the access pattern's:
//  - read: the whole buffer read contiguously (float4, grid-stride), summed per thread:
//    the read floor of 64 MiB, no column structure at all;
//  - lane1 R: a column per lane (128-byte rows of 32 columns per warp, as reduce_sum's),
//    R rows per thread summed in float, one atomicAdd per thread;
//  - lane1d R: the same in double (each element converted), atomicAdd of the double;
//  - lane1 groups: a column per lane, a warp per group of reduce_sum's order (tiles g,
//    g + 256, g + 512, g + 768 of 16 rows: 4 runs of 16 rows, 4096 rows apart), its 64 rows
//    loaded 32 at a time as reduce_sum does, summed in double, one atomicAdd per thread:
//    reduce_sum's access pattern without its ordered end;
//  - lane4 R: four columns per lane (float4, 512-byte rows of 128 columns per warp), R rows
//    per thread, float, one atomicAdd per column per thread.
//  - twograph's reduce_sum (kernels/cuda/reduce.cu; "v4", as colreduce_variants.cu numbers
//    the loops it replaced) on the same data, with programmatic dependent launch on and off
//    (LaunchScope).
// Each is launched 20 times back to back between two events (the mean per launch), after
// a warm-up, and compared with cudaMemcpyAsync of the same 64 MiB device to device timed
// the same way: pct = (64 MiB / t) / (2 x 64 MiB / t_copy), as tg-kernels' pct_of_copy.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>

#include "kernels/cuda/cuda_kernels.h"
#include "probe_common.cuh"

namespace {

constexpr int kRows = 16384, kCols = 1024;
constexpr long kN = static_cast<long>(kRows) * kCols;

__global__ void read_kernel(const float4* x, long n4, float* sink) {
  float acc = 0.0f;
  for (long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4;
       i += static_cast<long>(gridDim.x) * blockDim.x) {
    const float4 v = __ldg(x + i);
    acc += (v.x + v.y) + (v.z + v.w);
  }
  if (acc == 12345.678f) sink[0] = acc;  // keeps the loads; never true on this data
}

// Block: 8 warps x 32 lanes; blockIdx.x: 32-column tile; warp w of blockIdx.y sums rows
// [(8 y + w) R, +R) of its lane's column.
template <int R, typename Acc>
__global__ void __launch_bounds__(256) lane1_kernel(const float* x, Acc* y) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int c = blockIdx.x * 32 + lane;
  const long r0 = (static_cast<long>(blockIdx.y) * 8 + w) * R;
  const float* p = x + r0 * kCols + c;
  float v[R];
#pragma unroll
  for (int j = 0; j < R; ++j) v[j] = __ldg(p + static_cast<long>(j) * kCols);
  Acc acc = 0;
#pragma unroll
  for (int j = 0; j < R; ++j) acc += static_cast<Acc>(v[j]);
  atomicAdd(y + c, acc);
}

// Block (32-column tile blockIdx.x, groups 8 blockIdx.y + w): warp w sums its lane's
// column over the group's 4 tiles of 16 rows, 2 tiles (32 loads) at a time.
__global__ void __launch_bounds__(256) lane1_groups_kernel(const float* x, double* y) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int c = blockIdx.x * 32 + lane;
  const long g = static_cast<long>(blockIdx.y) * 8 + w;
  double acc = 0;
  for (int batch = 0; batch < 2; ++batch) {
    float v[32];
#pragma unroll
    for (int t = 0; t < 2; ++t)
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        const long r = (g + (2L * batch + t) * 256) * 16 + j;
        v[t * 16 + j] = __ldg(x + r * kCols + c);
      }
#pragma unroll
    for (int j = 0; j < 32; ++j) acc += static_cast<double>(v[j]);
  }
  atomicAdd(y + c, acc);
}

// Four columns per lane: blockIdx.x: 128-column tile; warp w of blockIdx.y sums rows
// [(8 y + w) R, +R) of its lane's four columns.
template <int R>
__global__ void __launch_bounds__(256) lane4_kernel(const float* x, float* y) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int c = blockIdx.x * 128 + lane * 4;
  const long r0 = (static_cast<long>(blockIdx.y) * 8 + w) * R;
  const float4* p = reinterpret_cast<const float4*>(x + r0 * kCols + c);
  float4 acc = make_float4(0, 0, 0, 0);
#pragma unroll 8
  for (int j = 0; j < R; ++j) {
    const float4 v = __ldg(p + static_cast<long>(j) * (kCols / 4));
    acc.x += v.x, acc.y += v.y, acc.z += v.z, acc.w += v.w;
  }
  atomicAdd(y + c, acc.x);
  atomicAdd(y + c + 1, acc.y);
  atomicAdd(y + c + 2, acc.z);
  atomicAdd(y + c + 3, acc.w);
}

}  // namespace

int main() {
  float *y, *copy_dst;
  double* yd;
  float* x = probe::upload(probe::pseudo_random(kN, 7, 1.0f));
  CK(cudaMalloc(&copy_dst, kN * sizeof(float)));
  CK(cudaMalloc(&y, kCols * sizeof(float)));
  CK(cudaMalloc(&yd, kCols * sizeof(double)));
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const probe::Stream s;
  auto per_launch_us = [&](auto&& launch) {
    launch();
    CK(cudaStreamSynchronize(s));
    float best = 1e30f;
    for (int round = 0; round < 3; ++round) best = std::min(best, probe::mean_us(s, 0, 20, launch));  // best of 3 x 20
    return best;
  };
  const double bytes = kN * 4.0;
  const float t_copy = per_launch_us([&] {
    CK(cudaMemcpyAsync(copy_dst, x, kN * sizeof(float), cudaMemcpyDeviceToDevice, s));
  });
  auto report = [&](const char* name, float t) {
    std::printf("%-22s %8.1f us  %6.0f GB/s  %5.1f%% of copy\n", name, t, bytes / t * 1e-3,
                100.0 * (bytes / t) / (2 * bytes / t_copy));
  };
  std::printf("[%d, %d] fp32 (64 MiB), %d SMs\n", kRows, kCols, sms);
  std::printf("%-22s %8.1f us  %6.0f GB/s (twice the bytes: read and written)\n", "d2d copy", t_copy,
              2 * bytes / t_copy * 1e-3);
  for (int per_sm : {4, 8, 16}) {
    const int blocks = per_sm * sms;
    char name[64];
    std::snprintf(name, sizeof name, "read %d x 256", blocks);
    report(name, per_launch_us([&] {
      read_kernel<<<blocks, 256, 0, s>>>(reinterpret_cast<const float4*>(x), kN / 4, y);
      CK(cudaGetLastError());
    }));
  }
  report("read, 1 float4/thread", per_launch_us([&] {
    read_kernel<<<static_cast<unsigned>(kN / 4 / 256), 256, 0, s>>>(reinterpret_cast<const float4*>(x), kN / 4, y);
    CK(cudaGetLastError());
  }));
#define LANE1(R, Acc, out, label)                                                                 \
  report(label, per_launch_us([&] {                                                               \
    lane1_kernel<R, Acc><<<dim3(kCols / 32, kRows / (8 * (R))), 256, 0, s>>>(x, out);             \
    CK(cudaGetLastError());                                                                       \
  }))
  LANE1(16, float, y, "lane1 16 rows");
  LANE1(32, float, y, "lane1 32 rows");
  LANE1(64, float, y, "lane1 64 rows");
  LANE1(16, double, yd, "lane1d 16 rows");
  LANE1(32, double, yd, "lane1d 32 rows");
  LANE1(64, double, yd, "lane1d 64 rows");
#undef LANE1
  report("lane1 groups (v4 rows)", per_launch_us([&] {
    lane1_groups_kernel<<<dim3(kCols / 32, 256 / 8), 256, 0, s>>>(x, yd);
    CK(cudaGetLastError());
  }));
#define LANE4(R, label)                                                                           \
  report(label, per_launch_us([&] {                                                               \
    lane4_kernel<R><<<dim3(kCols / 128, kRows / (8 * (R))), 256, 0, s>>>(x, y);                   \
    CK(cudaGetLastError());                                                                       \
  }))
  LANE4(16, "lane4 16 rows");
  LANE4(32, "lane4 32 rows");
  LANE4(64, "lane4 64 rows");
  LANE4(128, "lane4 128 rows");
#undef LANE4
  void* scratch;
  const size_t scratch_bytes = 1u << 20;
  CK(cudaMalloc(&scratch, scratch_bytes));
  namespace kc = tg::kernels::cuda;
  for (bool pdl : {true, false}) {
    const kc::LaunchScope launches(pdl);
    char name[64];
    // "v4": the library's loop, as colreduce_variants.cu numbers the loops; saved outputs are
    // read by these labels (scripts/docs_tables/compiler.py).
    std::snprintf(name, sizeof name, "tg reduce_sum v4 pdl %s", pdl && kc::pdl_active() ? "on" : "off");
    report(name, per_launch_us([&] { kc::reduce_sum(x, y, 1, kRows, kCols, scratch, scratch_bytes, s); }));
  }
  return 0;
}
