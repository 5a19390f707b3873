// transpose (any permutation of up to 4 dims), reshape (a view), concat and slice.
#include <cstring>

#include "kernels/block_copy.h"
#include "kernels/cpu/cpu_kernels.h"

namespace tg::kernels {

void cpu_transpose(const float* x, const int64_t* in_dims, int rank, const int* perm, float* y) {
  // Pad to 4 dims with leading 1s, then walk the output in order and gather
  // from the input through its permuted strides.
  int64_t in_stride[kMaxRank];
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; --d) {
    in_stride[d] = s;
    s *= in_dims[d];
  }
  int64_t od[kMaxRank] = {1, 1, 1, 1};  // output dims, padded
  int64_t st[kMaxRank] = {0, 0, 0, 0};  // input stride of each output dim
  const int pad = kMaxRank - rank;
  for (int d = 0; d < rank; ++d) {
    od[pad + d] = in_dims[perm[d]];
    st[pad + d] = in_stride[perm[d]];
  }
  int64_t o = 0;
  for (int64_t i0 = 0; i0 < od[0]; ++i0)
    for (int64_t i1 = 0; i1 < od[1]; ++i1)
      for (int64_t i2 = 0; i2 < od[2]; ++i2) {
        const float* src = x + i0 * st[0] + i1 * st[1] + i2 * st[2];
        for (int64_t i3 = 0; i3 < od[3]; ++i3) y[o++] = src[i3 * st[3]];
      }
}

void cpu_reshape(const float* x, float* y, int64_t n) {
  // An executor that aliases the output (the usual case) pays nothing.
  if (x != y && n > 0) std::memmove(y, x, static_cast<size_t>(n) * sizeof(float));
}

namespace {
void copy_block(const float* src, float* dst, const BlockCopy& b) {
  for (int64_t e = 0; e < b.count(); ++e) dst[b.dst(e)] = src[b.src(e)];
}
}  // namespace

void cpu_concat(const OpCall& c, const CallGeometry& g) {
  for (int i = 0; i < c.num_inputs; ++i) copy_block(c.input(i).data, c.out.data, concat_block(c, g, i));
}

void cpu_slice(const OpCall& c, const CallGeometry& g) { copy_block(c.in[0].data, c.out.data, slice_block(c, g)); }

}  // namespace tg::kernels
