#pragma once
// Tensor shapes and element types of the IR. Nothing here knows about devices.
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

namespace tg {

// The most dims a tensor has: attention's [batch, heads, groups, query, key] views and
// the reshapes around them in exported language models reach 5 and 6.
constexpr int kMaxRank = 6;

// The element types of the IR. Every value carries one; the op table's dtype column
// (graph/op.h) says which combinations an op accepts; which of them a backend has kernels
// for is Backend::runs (kernels/backend.h), asked by both executors before they run.
// I32 and I64 are data only (token ids, class labels): the ops that take them are listed
// in graph/dtype_rules.h, and autodiff never differentiates through them.
enum class DType : uint8_t { F32, BF16, F16, I32, I64 };

inline bool dtype_is_int(DType dt) { return dt == DType::I32 || dt == DType::I64; }
inline bool dtype_is_float(DType dt) { return dt == DType::F32 || dt == DType::BF16 || dt == DType::F16; }
// Whether dt is one of DType's enumerators (a graph file or a cast may hold any byte).
inline bool dtype_is_known(DType dt) { return dtype_is_float(dt) || dtype_is_int(dt); }

const char* dtype_name(DType dt);
// " bf16" for a value that is not f32, "" for f32: the suffix listings and DOT labels add.
std::string dtype_suffix(DType dt);
int dtype_size(DType dt);
bool parse_dtype(const std::string& s, DType& out);

struct Shape {
  int rank = 0;
  std::array<int64_t, kMaxRank> dims{};

  Shape() = default;
  Shape(std::initializer_list<int64_t> d);

  int64_t operator[](int i) const { return dims[static_cast<size_t>(i)]; }
  int64_t& operator[](int i) { return dims[static_cast<size_t>(i)]; }
  int64_t last() const { return rank > 0 ? dims[static_cast<size_t>(rank - 1)] : 1; }
  // Product of all dims. Callers that accept untrusted shapes validate first
  // (numel_checked) because the product can overflow.
  int64_t numel() const;
  // Product of all dims but the last: the "rows" of a row-major tensor.
  int64_t rows() const;
  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }
  std::string str() const;  // "[32,512]"
};

// Returns false (and leaves out untouched) when the element count or the byte
// count would not fit in int64.
bool numel_checked(const Shape& s, int64_t& out);

// Whether `copy` can be a parameter's low-precision weight copy (graph/op.h kWeightCopy): the
// parameter's shape, or with more rows along dim 0 (the vocab_pad pass pads a vocabulary's
// rows to aligned extents); its first param.numel() elements are the copy, the rest padding.
inline bool copy_shape_fits(const Shape& copy, const Shape& param) {
  if (copy.rank != param.rank || copy.rank == 0 || copy[0] < param[0]) return false;
  for (int d = 1; d < copy.rank; ++d)
    if (copy[d] != param[d]) return false;
  return true;
}

// Where slice(x, axis, start, ...) begins in x, in elements, when its output is one contiguous
// block of x (every axis before `axis` has size 1); -1 when it is strided. Both executors make
// such a slice a view of x where they can (static/planner.h, dynamic/eager_builder.cpp).
int64_t contiguous_slice_offset(const Shape& x, int axis, int64_t start);

}  // namespace tg
