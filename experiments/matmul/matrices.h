#pragma once
// Inputs and result checks for tg-matmul (CPU only; no CUDA here).
#include <cstddef>
#include <cstdint>
#include <string>

#include "graph/shape.h"

namespace tg::matmul {

// A product's precision on the GPU: the operands' dtype, and TF32 for f32 operands.
struct GemmType {
  DType dtype = DType::F32;
  bool tf32 = false;
};

// Uniform in [-1, 1) from a counter-based generator (so any seed gives the same
// matrix on every machine); never zeros, which would hide a kernel that writes nothing.
void fill_uniform(float* x, size_t count, uint64_t seed);
void poison_nan(float* x, size_t count);  // quiet NaN: an element never written stays visible

// The tolerance of one element of an n x n x k product: atol + rtol * |ref|. Rounding
// errors of a length-k dot product grow like sqrt(k) for random signs; TF32 rounds
// the inputs to 10 mantissa bits (relative error ~2^-11 per input) against fp32's 23.
// precision: fp32, tf32, bf16 or fp16 (the last two against the f32 product of the same
// 16-bit inputs, their result rounded once).
struct Tolerance {
  double atol = 0, rtol = 0;
};
Tolerance tolerance(const std::string& precision, int64_t k);

struct Comparison {
  int64_t mismatches = 0;
  double max_abs_err = 0;
  std::string first;  // the first few mismatches, one per line: (row, col) ref got
};
// Row-major n x n, every element.
Comparison compare(const float* ref, const float* got, int64_t n, const Tolerance& tol);

// Checks 64 elements of C = A B (n x n, row-major) against a dot product in double:
// the CPU reference is checked too, not trusted. Throws std::runtime_error on a mismatch.
void spot_check(const float* a, const float* b, const float* c, int64_t n, const std::string& what);

}  // namespace tg::matmul
