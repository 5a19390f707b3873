#include "graph/shape.h"

#include <limits>
#include <stdexcept>

#include "graph/enum_names.h"

namespace tg {

namespace {
constexpr const char* kDtypeNames[] = {"f32", "bf16", "f16", "i32", "i64"};  // in DType's order
}  // namespace

const char* dtype_name(DType dt) { return enum_name(kDtypeNames, dt); }

std::string dtype_suffix(DType dt) { return dt == DType::F32 ? "" : std::string(" ") + dtype_name(dt); }

int dtype_size(DType dt) {
  switch (dt) {
    case DType::BF16:
    case DType::F16: return 2;
    case DType::I64: return 8;
    case DType::F32:
    case DType::I32: break;
  }
  return 4;
}

bool parse_dtype(const std::string& s, DType& out) { return parse_enum(kDtypeNames, s, out); }

Shape::Shape(std::initializer_list<int64_t> d) {
  if (d.size() > static_cast<size_t>(kMaxRank)) throw std::invalid_argument("Shape: more than kMaxRank (6) dims");
  for (int64_t v : d) dims[static_cast<size_t>(rank++)] = v;
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= dims[static_cast<size_t>(i)];
  return n;
}

int64_t Shape::rows() const {
  int64_t n = 1;
  for (int i = 0; i + 1 < rank; ++i) n *= dims[static_cast<size_t>(i)];
  return n;
}

bool Shape::operator==(const Shape& o) const {
  if (rank != o.rank) return false;
  for (int i = 0; i < rank; ++i)
    if (dims[static_cast<size_t>(i)] != o.dims[static_cast<size_t>(i)]) return false;
  return true;
}

std::string Shape::str() const {
  std::string s = "[";
  for (int i = 0; i < rank; ++i) {
    if (i) s += ",";
    s += std::to_string(dims[static_cast<size_t>(i)]);
  }
  return s + "]";
}

bool numel_checked(const Shape& s, int64_t& out) {
  // Keep the byte count (numel * 4) representable too.
  const int64_t limit = std::numeric_limits<int64_t>::max() / 8;
  int64_t n = 1;
  for (int i = 0; i < s.rank; ++i) {
    int64_t d = s[i];
    if (d <= 0) return false;
    if (n > limit / d) return false;
    n *= d;
  }
  out = n;
  return true;
}

int64_t contiguous_slice_offset(const Shape& x, int axis, int64_t start) {
  if (axis < 0 || axis >= x.rank) return -1;
  for (int d = 0; d < axis; ++d)
    if (x[d] != 1) return -1;
  int64_t inner = 1;
  for (int d = axis + 1; d < x.rank; ++d) inner *= x[d];
  return start * inner;
}

}  // namespace tg
