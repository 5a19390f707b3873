#pragma once
// Which operands of a cuBLASLt GEMM (kernels/cuda/gemm/gemm.h, path 5) run on padded copies,
// and the copies' room in the call's workspace.
//
// Why: cuBLASLt's fast kernels move 16 bytes at a time along each operand's contiguous
// dimension, so they need that dimension's extent and leading dim in whole 16-byte steps. A
// language model's vocabulary is the common case where they are not: GPT-2's 50257 columns
// of logits, an odd count, leave cuBLASLt only its kernels of one element at a time for the
// vocabulary's three products (the logits, and the two gradients that read the logits'
// gradient), several times slower than aligned ones and the larger part of a bf16 training
// step (docs/language-models.md). A padded leading dim alone is not enough: the extent
// itself must be padded. So the product is computed at padded m, n and k: each operand whose
// extents or leading dim change is copied into a buffer of the padded extents, zeros in the
// padding (a padded k adds products of zeros), the output is computed into such a buffer and
// its m x n part copied out, and a bias or a bias gradient likewise. The copies cost a read
// and a write of each staged operand, so staging is done only where the product does many
// multiply-adds per copied element. The tensors stay dense (PyTorch's compiler pads such
// strides in its own tensors instead), so both executors route every call alike.
// Plain C++: the rule is tested in a build without a GPU.
#include <cstddef>
#include <cstdint>
#include <initializer_list>

namespace tg::kernels {

// The smallest product (m n k multiply-adds) staged, and the fewest multiply-adds per
// copied element: below these a copy costs more than the unaligned kernels lose.
inline constexpr int64_t kStagingMinProduct = int64_t{1} << 30;
inline constexpr int64_t kStagingMinRatio = 64;

// One GEMM of the routing's path 5 in row-major terms, not batched: D (m x n, leading dim
// ldd) = op(A) op(B) (+ C, in D's layout: staged with D) (+ bias over D's columns, or a bias
// gradient of n values: bias). A is stored [m, k] ([k, m] with trans_a), B [k, n] ([n, k] with trans_b).
// esize: the bytes of an element (2 or 4).
struct GemmStagingShape {
  bool trans_a = false, trans_b = false, bias = false;
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldd = 0;
  int esize = 4;
};

struct GemmStaging {
  // A stored matrix, rows x cols of leading dim ld as the call holds it, and, when staged,
  // its copy: padded_rows x padded_cols, leading dim padded_cols, at `offset` bytes into the
  // workspace (256-byte aligned), zeros outside the copied part.
  struct Operand {
    bool staged = false;
    int64_t rows = 0, cols = 0, ld = 0;
    int64_t padded_rows = 0, padded_cols = 0;
    size_t offset = 0;
  };
  // d staged: the product is computed into the copy and its m x n part copied out (the
  // accumulated term C copied into it first). bias: the bias (or bias gradient) as a 1 x n
  // matrix, staged when n is padded.
  Operand a, b, d, bias;
  int64_t m = 0, n = 0, k = 0;  // the product as computed: padded where staged
  size_t bytes = 0;             // the copies' room; 0 when nothing is staged
};

inline bool gemm_extent_aligned(int64_t extent, int esize) { return (extent * esize) % 16 == 0; }
// The extent rounded up to whole 16-byte steps of elements of esize bytes (2 or 4): what a
// staged operand's contiguous dimension becomes.
inline int64_t gemm_padded_extent(int64_t extent, int esize) {
  const int64_t per16 = 16 / esize;
  return (extent + per16 - 1) / per16 * per16;
}

// Every operand whose extents or leading dim must change is staged, or none: one unaligned
// operand is enough to keep cuBLASLt on its one-element kernels. min_product: the backend's
// kStagingMinProduct; a test of the rule's users may lower it.
inline GemmStaging plan_gemm_staging(const GemmStagingShape& s, int64_t min_product = kStagingMinProduct) {
  GemmStaging out;
  out.m = s.m, out.n = s.n, out.k = s.k;
  auto operand = [](int64_t rows, int64_t cols, int64_t ld) {
    GemmStaging::Operand o;
    o.rows = o.padded_rows = rows;
    o.cols = o.padded_cols = cols;
    o.ld = ld;
    return o;
  };
  out.a = s.trans_a ? operand(s.k, s.m, s.lda) : operand(s.m, s.k, s.lda);
  out.b = s.trans_b ? operand(s.n, s.k, s.ldb) : operand(s.k, s.n, s.ldb);
  out.d = operand(s.m, s.n, s.ldd);
  out.bias = operand(1, s.n, s.n);
  if (s.m <= 0 || s.n <= 0 || s.k <= 0 || (s.esize != 2 && s.esize != 4)) return out;
  const GemmStaging none = out;
  // Each dim that is some operand's contiguous one goes up to whole 16-byte steps.
  auto up = [&](int64_t x) { return gemm_padded_extent(x, s.esize); };
  const int64_t m = s.trans_a ? up(s.m) : s.m;
  const int64_t n = up(s.n);  // D's rows run along n
  const int64_t k = (!s.trans_a || s.trans_b) ? up(s.k) : s.k;
  auto pad = [&](GemmStaging::Operand& o, int64_t rows, int64_t cols) {
    o.padded_rows = rows;
    o.padded_cols = cols;
    o.staged = rows != o.rows || cols != o.cols || !gemm_extent_aligned(o.ld, s.esize);
  };
  if (s.trans_a) pad(out.a, k, m);
  else pad(out.a, m, k);
  if (s.trans_b) pad(out.b, n, k);
  else pad(out.b, k, n);
  pad(out.d, m, n);
  out.bias.padded_cols = n;
  out.bias.staged = s.bias && n != s.n;
  int64_t elements = 0;
  size_t bytes = 0;
  for (GemmStaging::Operand* o : {&out.a, &out.b, &out.d, &out.bias}) {
    if (!o->staged) continue;
    o->offset = bytes;
    bytes += (static_cast<size_t>(o->padded_rows * o->padded_cols) * static_cast<size_t>(s.esize) + 255) / 256 * 256;
    elements += o->rows * o->cols;
  }
  const double product = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (elements == 0 || product < static_cast<double>(min_product) ||
      product < static_cast<double>(kStagingMinRatio) * static_cast<double>(elements))
    return none;
  out.m = m, out.n = n, out.k = k;
  out.bytes = bytes;
  return out;
}

}  // namespace tg::kernels
