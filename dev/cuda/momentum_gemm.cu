// What would SGD momentum inside the weight-gradient GEMM save on the w4096 MLP's step?
// tg-train's step with every pass stays ~170 us above the GEMM floor, mostly the update
// (update_overlap.cu: it cannot hide beside the GEMMs). cuBLASLt computes
// D = alpha A B + beta C, so a weight-gradient GEMM with beta = momentum and C = D = the
// velocity writes the new velocity in place of the gradient: the gradient never goes to
// memory and the update that follows is plain SGD on the velocity (p -= lr v: three floats
// an element instead of five). Whether that pays depends on what reading C costs a
// compute-bound GEMM, which this probe measures.
//
// For G weights of 4096 x 4096 (the MLP's hidden layers; batch 1024), each timed as the
// sequence the step would run, back to back:
//  unfused: dW = X^T dY (beta 0) into a gradient, then v = mu v + g, p -= lr v (5 floats);
//  fused:   v = X^T dY + mu v (beta = mu, C = D = v), then p -= lr v (3 floats);
// and the GEMMs alone with beta 0 and with beta = mu, and the two updates alone. Both
// sequences start from the same p and v; the probe prints the largest difference of the
// resulting p and v (relative to their largest magnitude): the fused form rounds
// mu v + (X^T dY) once in the epilogue where the unfused rounds the product, then the sum.
#include "wgrad_common.cuh"

namespace {

using namespace wgrad;

// p -= lr v, n4 float4s: the update left when the GEMM wrote the velocity.
__global__ void sgd_kernel(float4* p, const float4* v, long n4, float lr) {
  const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n4) return;
  const float4 vv = v[i];
  float4 pp = p[i];
  pp.x = fmaf(-lr, vv.x, pp.x), pp.y = fmaf(-lr, vv.y, pp.y), pp.z = fmaf(-lr, vv.z, pp.z),
  pp.w = fmaf(-lr, vv.w, pp.w);
  p[i] = pp;
}

}  // namespace

int main() {
  const Context ctx;
  cudaStream_t s = ctx.s;
  // 1: the unfused form's state, 2: the fused form's, from the same values.
  const std::vector<Layer> layers = make_layers();
  std::vector<float*> x(G), dy(G), grad(G), p1(G), v1(G), p2(G), v2(G);
  for (int l = 0; l < G; ++l) {
    const Layer& w = layers[static_cast<size_t>(l)];
    x[l] = w.x, dy[l] = w.dy, grad[l] = w.grad, p1[l] = w.p, v1[l] = w.v;
    p2[l] = clone(p1[l], kWeight);
    v2[l] = clone(v1[l], kWeight);
  }
  const LtWeightGrad gemm(ctx.lt, ctx.ws_bytes, 1);
  const float zero = 0.0f, mu = kMu;
  const long n4 = kWeight / 4;
  const unsigned blocks = static_cast<unsigned>((n4 + 255) / 256);
  auto wgrad = [&](int l, float* out, const float* beta) { gemm.run(ctx.lt, x[l], dy[l], out, beta, ctx.ws, 0, s); };
  auto update_unfused = [&](int l, float* p, float* v) {
    sgd_momentum_kernel<<<blocks, 256, 0, s>>>(reinterpret_cast<float4*>(p), reinterpret_cast<const float4*>(grad[l]),
                                               reinterpret_cast<float4*>(v), n4, kLr, kMu);
    CK(cudaGetLastError());
  };
  auto update_fused = [&](float* p, const float* v) {
    sgd_kernel<<<blocks, 256, 0, s>>>(reinterpret_cast<float4*>(p), reinterpret_cast<const float4*>(v), n4, kLr);
    CK(cudaGetLastError());
  };

  // One step of each form from the same state: the difference they make.
  for (int l = 0; l < G; ++l) {
    wgrad(l, grad[l], &zero);
    update_unfused(l, p1[l], v1[l]);
    wgrad(l, v2[l], &mu);
    update_fused(p2[l], v2[l]);
  }
  CK(cudaStreamSynchronize(s));
  double dv = 0, dp = 0;
  for (int l = 0; l < G; ++l) {
    dv = std::max(dv, max_rel_diff(v1[l], v2[l], kWeight));
    dp = std::max(dp, max_rel_diff(p1[l], p2[l], kWeight));
  }
  std::printf("one step, fused against unfused: max |dv| / max |v| = %.3g, max |dp| / max |p| = %.3g\n", dv, dp);

  // The state keeps evolving over the timed runs (a few steps of lr 1e-3 on bounded data
  // stay finite).
  const float gemm_beta0 = median_us(s, [&] { for (int l = 0; l < G; ++l) wgrad(l, grad[l], &zero); });
  const float gemm_betamu = median_us(s, [&] { for (int l = 0; l < G; ++l) wgrad(l, v2[l], &mu); });
  const float upd5 = median_us(s, [&] { for (int l = 0; l < G; ++l) update_unfused(l, p1[l], v1[l]); });
  const float upd3 = median_us(s, [&] { for (int l = 0; l < G; ++l) update_fused(p2[l], v2[l]); });
  const float unfused = median_us(s, [&] {
    for (int l = 0; l < G; ++l) {
      wgrad(l, grad[l], &zero);
      update_unfused(l, p1[l], v1[l]);
    }
  });
  const float fused = median_us(s, [&] {
    for (int l = 0; l < G; ++l) {
      wgrad(l, v2[l], &mu);
      update_fused(p2[l], v2[l]);
    }
  });
  std::printf("%d weight gradients of %d x %d (batch %d), microseconds, median of 9:\n", G, kIn, kOut, kBatch);
  std::printf("  GEMMs, beta 0                     %9.1f\n", gemm_beta0);
  std::printf("  GEMMs, beta mu, C = D = velocity  %9.1f\n", gemm_betamu);
  std::printf("  sgd_momentum (5 floats/element)   %9.1f\n", upd5);
  std::printf("  sgd on the velocity (3 floats)    %9.1f\n", upd3);
  std::printf("  unfused: GEMM + sgd_momentum      %9.1f\n", unfused);
  std::printf("  fused:   GEMM(beta mu) + sgd      %9.1f\n", fused);
  std::printf("  saved                             %9.1f (%.1f%% of unfused)\n", unfused - fused,
              100.0 * (unfused - fused) / unfused);
  return 0;
}
