// transpose (any permutation of up to kMaxRank dims), reshape (a view), concat and slice.
#include <cstring>

#include "kernels/block_copy.h"
#include "kernels/cpu/cpu_kernels.h"

namespace tg::kernels {

void cpu_transpose(const float* x, const int64_t* in_dims, int rank, const int* perm, float* y) {
  // Walk the output in order and gather from the input through its permuted strides:
  // the outer output dims as a counter, the last one as the inner loop.
  if (rank == 0) {
    y[0] = x[0];
    return;
  }
  int64_t in_stride[kMaxRank];
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; --d) {
    in_stride[d] = s;
    s *= in_dims[d];
  }
  int64_t od[kMaxRank], st[kMaxRank];  // output dims, input stride of each output dim
  for (int d = 0; d < rank; ++d) {
    od[d] = in_dims[perm[d]];
    st[d] = in_stride[perm[d]];
  }
  const int last = rank - 1;
  int64_t idx[kMaxRank] = {};
  int64_t src = 0, o = 0;
  const int64_t rows = s / od[last];
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < od[last]; ++i) y[o++] = x[src + i * st[last]];
    for (int d = last - 1; d >= 0; --d) {  // the next output row: carry through the counter
      src += st[d];
      if (++idx[d] < od[d]) break;
      src -= st[d] * od[d];
      idx[d] = 0;
    }
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
