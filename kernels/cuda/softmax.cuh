#pragma once
// Row softmax building blocks (internal to kernels/cuda), shared by softmax.cu and
// the cross-entropy kernels of loss.cu: the row max and the sum of exp(x - max), in
// the scalar frame and the float4 frame of rows.cuh.
#include "kernels/cuda/rows.cuh"

namespace tg::kernels::cuda::detail {

// Row max and sum of exp(a - max) over a = alpha * x (rounded as the scale op rounds it;
// alpha 1 is exact); the cache ends up holding exp(a - max). A row too long for the cache
// (VPT 0: a language model's vocabulary) is read once, each thread keeping a running max and
// a sum rescaled when the max grows (the online softmax), the threads' sums then rescaled to
// the row's max: one pass over the row instead of two.
template <int G, int VPT, typename T>
__device__ __forceinline__ void exp_sum(const T* x, int64_t cols, int t, float* smem, RowCache<VPT>& c,
                                        float& m, float& s, float alpha = 1.0f) {
  if constexpr (VPT == 0) {
    float mt = -INFINITY, st = 0.0f;
    row_chunks<G>(x, cols, t, [&](int64_t, float raw) {
      const float a = __fmul_rn(alpha, raw);
      if (a > mt) {
        st = st * expf(mt - a) + 1.0f;
        mt = a;
      } else if (a != -INFINITY) {  // -inf adds exp(-inf) = 0; before any finite value mt - a would be NaN
        st += expf(a - mt);
      }
    });
    m = group_max<G>(mt, smem);
    // A thread that saw nothing (or only -inf) adds 0; one that saw a NaN passes it on.
    s = group_sum<G>(st == 0.0f ? 0.0f : st * expf(mt - m), smem);
  } else {
    m = -INFINITY;
    TG_ROW_LOOP(k, j) {
      const float a = __fmul_rn(alpha, x[j]);
      c.put(k, a);
      m = fmaxf(m, a);
    }
    m = group_max<G>(m, smem);
    s = 0.0f;
    TG_ROW_LOOP(k, j) {
      const float e = expf(c.get(k, x, j) - m);
      c.put(k, e);
      s += e;
    }
    s = group_sum<G>(s, smem);
  }
}

// exp(a - max) of column k of this thread, as exp_sum left it in the cache. A row too long
// for the cache (VPT 0) has none: its callers recompute from their own reads (row_chunks).
template <int VPT>
__device__ __forceinline__ float cached_exp(const RowCache<VPT>& c, int k) {
  static_assert(VPT > 0, "a row without the register cache recomputes its exps");
  return c.v[k];
}

// float4 frame: row max and sum of exp(x - max); v ends up holding exp(x - max).
// expf (not __expf) keeps the error at ~1 ulp; it is off the critical path here.
template <int NV>
__device__ __forceinline__ void exp_sum4(float (&v)[NV][4], int t, int nq, float& m, float& s) {
  m = -INFINITY;
  TG_CHUNK_LOOP(k) TG_LANE_LOOP(i) m = fmaxf(m, v[k][i]);
  m = warp_max(m);
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  TG_CHUNK_LOOP(k) TG_LANE_LOOP(i) {
    v[k][i] = expf(v[k][i] - m);
    acc[i] += v[k][i];
  }
  s = warp_sum(sum4(acc));
}

}  // namespace tg::kernels::cuda::detail
