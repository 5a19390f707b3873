#pragma once
// The geometry of matmul_heads (graph/op.h): a batched product whose operands and result
// are each either packed, [N, r, c] with matrix i at i*r*c, or a head view of heads H,
// [N / H, r, H*c] with matrix i = b*H + h at b*r*H*c + h*c and leading dimension H*c: the
// layout of a linear layer's output before attention splits it into heads, so that the
// split (and the merge after) need no transpose. One function for the shape rule, the
// kernel entry check and both backends' kernels.
#include <cstdint>
#include <string>

#include "graph/attrs.h"
#include "graph/shape.h"

// offset() also runs on the GPU (kernels/cuda/gemm/gemm_heads_pointers.cu writes the matrices'
// addresses for a pointer-array GEMM), so it is host and device code under nvcc.
#if defined(__CUDACC__)
#define TG_HEADS_HOST_DEVICE __host__ __device__
#else
#define TG_HEADS_HOST_DEVICE
#endif

namespace tg {

// One operand's N stored matrices (before any transpose): rows x cols each.
struct HeadsMatrix {
  bool view = false;
  int64_t rows = 0, cols = 0;
  int64_t ld = 0;  // row pitch: cols packed, heads * cols in a head view
  // Offset of matrix i (elements from the tensor's start).
  TG_HEADS_HOST_DEVICE int64_t offset(int64_t i, int64_t heads) const {
    return view ? (i / heads) * rows * ld + (i % heads) * cols : i * rows * cols;
  }
};

struct HeadsGeometry {
  int64_t heads = 0, batch = 0;  // batch: N, the matrices of each operand
  int64_t m = 0, n = 0, k = 0;   // out_i (m x n) = op(a_i) (m x k) op(b_i) (k x n)
  HeadsMatrix a, b, out;
  Shape out_shape;
};

// The geometry of matmul_heads over inputs of shapes a and b: true and g filled, or false
// and *why set when the shapes do not fit the attributes (the message names the shapes and the
// fix, without the op's name).
bool heads_geometry(const Shape& a, const Shape& b, const Attrs& at, HeadsGeometry& g, std::string* why);

}  // namespace tg
