// The skinny-GEMM kernels (kernels/cuda/gemm/gemm_skinny.cu) on the three thin products of the
// w4096 MLP's last layer (batch 1024, 4096 -> 10), against cuBLAS's SGEMM on the same
// operands, and against the bytes each must move:
//  - forward: [1024, 4096] x [4096, 10] + bias (skinny_n; 16 MiB read);
//  - weight gradient: x^T dz, [4096, 1024] x [1024, 10], with the bias gradient (skinny_nt;
//    16 MiB read);
//  - input gradient: dz W^T, [1024, 10] x [10, 4096], then relu_grad by the activation
//    (skinny_k; 16 MiB read, 16 MiB written).
// Printed for each: the largest relative difference of the plain product from cuBLAS's,
// then the mean time of a launch (20 launches back to back in a CUDA Graph, median of 9
// replays after 2) of cuBLAS's SGEMM (plain product), of the skinny kernel plain and with the
// step's epilogue, and of a device-to-device copy of the bytes the epilogued kernel moves
// (half read, half written), as the rate the memory allows.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/gemm/gemm_small.h"
#include "wgrad_common.cuh"  // CK, pseudo-random operands, max_rel_diff, median_us

namespace cu = tg::kernels::cuda;

namespace {

constexpr int kBatch = 1024, kWide = 4096, kThin = 10, kLaunches = 20;

// Pseudo-random values in [-0.5, 0.5) on the device.
float* random_device(long n, unsigned seed) { return wgrad::upload(wgrad::pseudo_random(n, seed, 1.0f)); }

// Mean microseconds a call of body, kLaunches of them captured into one graph (the median
// replay of wgrad::median_us, divided by kLaunches).
template <typename Body>
float graph_us(cudaStream_t s, Body&& body) {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < kLaunches; ++i) body();
  CK(cudaStreamEndCapture(s, &graph));
  CK(cudaGraphInstantiate(&exec, graph, 0));
  const float us = wgrad::median_us(s, [&] { CK(cudaGraphLaunch(exec, s)); }) / kLaunches;
  CK(cudaGraphExecDestroy(exec));
  CK(cudaGraphDestroy(graph));
  return us;
}

struct Product {
  const char* name;
  cu::GemmArgs plain, step;  // step: with the step's epilogue
  long out_elems;
  double bytes;  // what the step's kernel must move at least
};

}  // namespace

int main() {
  const probe::Stream s;
  const probe::BlasHandle h;
  const long wide = static_cast<long>(kBatch) * kWide;
  float* x = random_device(wide, 1);             // [1024, 4096] activations
  float* w = random_device(kWide * kThin, 2);    // [4096, 10] weight
  float* bias = random_device(kThin, 3);
  float* dz = random_device(kBatch * kThin, 4);  // [1024, 10] output gradient
  float *out_small, *out_ref, *out_wide, *ref_wide, *bias_grad, *copy_dst;
  CK(cudaMalloc(&out_small, kWide * kThin * sizeof(float)));
  CK(cudaMalloc(&out_ref, kWide * kThin * sizeof(float)));
  CK(cudaMalloc(&out_wide, wide * sizeof(float)));
  CK(cudaMalloc(&ref_wide, wide * sizeof(float)));
  CK(cudaMalloc(&bias_grad, kThin * sizeof(float)));
  CK(cudaMalloc(&copy_dst, 2 * wide * sizeof(float)));

  std::vector<Product> products(3);
  {  // forward: y = x w + bias
    Product& p = products[0];
    p.name = "forward [1024,4096]x[4096,10]";
    cu::GemmArgs g;
    g.a = x, g.b = w, g.d = out_small, g.m = kBatch, g.n = kThin, g.k = kWide, g.lda = kWide, g.ldb = kThin, g.ldd = kThin;
    p.plain = g;
    g.bias = bias;
    p.step = g;
    p.out_elems = kBatch * kThin;
    p.bytes = wide * 4.0;
  }
  {  // weight gradient: dw = x^T dz, db = column sums of dz
    Product& p = products[1];
    p.name = "weight grad [4096,1024]x[1024,10]";
    cu::GemmArgs g;
    g.a = x, g.b = dz, g.d = out_small, g.m = kWide, g.n = kThin, g.k = kBatch, g.lda = kWide, g.ldb = kThin, g.ldd = kThin;
    g.trans_a = true;
    p.plain = g;
    g.bias_grad = bias_grad;
    p.step = g;
    p.out_elems = kWide * kThin;
    p.bytes = wide * 4.0;
  }
  {  // input gradient: dx = relu_grad(dz w^T, x)
    Product& p = products[2];
    p.name = "input grad [1024,10]x[10,4096]";
    cu::GemmArgs g;
    g.a = dz, g.b = w, g.d = out_wide, g.m = kBatch, g.n = kWide, g.k = kThin, g.lda = kThin, g.ldb = kThin, g.ldd = kWide;
    g.trans_b = true;
    p.plain = g;
    g.act_in = x;
    g.act_grad = tg::Act::relu;
    p.step = g;
    p.out_elems = wide;
    p.bytes = 2 * wide * 4.0;
  }
  std::printf("%-36s %10s %9s %9s %9s %9s %7s\n", "product", "rel diff", "cublas", "skinny", "+epilog", "copy", "of copy");
  for (const Product& p : products) {
    const cu::GemmArgs& g = p.plain;
    float* ref = p.out_elems == wide ? ref_wide : out_ref;
    // cuBLAS on the same row-major operands: C[m,n] = op(A) op(B).
    auto cublas = [&] {
      cu::sgemm(h, s, false, g.trans_a, g.trans_b, g.m, g.n, g.k, g.a, g.lda, g.b, g.ldb, ref, g.ldd);
    };
    CK(cublasSetStream(h, s));
    cublas();
    cu::skinny_gemm(g, s);
    CK(cudaStreamSynchronize(s));
    const double diff = wgrad::max_rel_diff(ref, g.d, p.out_elems);
    const float t_cublas = graph_us(s, cublas);
    const float t_plain = graph_us(s, [&] { cu::skinny_gemm(p.plain, s); });
    const float t_step = graph_us(s, [&] { cu::skinny_gemm(p.step, s); });
    const size_t half = static_cast<size_t>(p.bytes / 2);
    const float t_copy =
        graph_us(s, [&] { CK(cudaMemcpyAsync(copy_dst, reinterpret_cast<char*>(copy_dst) + half, half, cudaMemcpyDeviceToDevice, s)); });
    // The copy moves `half` read + `half` written; the kernel must move p.bytes.
    const float copy_rate_us = t_copy * static_cast<float>(p.bytes / (2.0 * half));
    std::printf("%-36s %10.3g %9.2f %9.2f %9.2f %9.2f %6.0f%%\n", p.name, diff, t_cublas, t_plain, t_step, copy_rate_us,
                100.0f * copy_rate_us / t_step);
  }
  return 0;
}
