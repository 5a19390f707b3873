// The ops that move i32 and i64 values (graph/dtype_rules.h): copy, reshape, slice and
// concat move their bytes; cast converts between them and the float dtypes, an integer
// to the nearest float, a float to an integer toward zero (saturating, NaN to 0), and
// between i32 and i64 keeping the value (saturating when an i64 does not fit an i32).
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/float_formats.h"
#include "kernels/block_copy.h"
#include "kernels/cpu/cpu_kernels.h"

namespace tg::kernels {

namespace {

void copy_block_bytes(const void* src, void* dst, const BlockCopy& b, size_t size) {
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  for (int64_t e = 0; e < b.count(); ++e)
    std::memcpy(d + static_cast<size_t>(b.dst(e)) * size, s + static_cast<size_t>(b.src(e)) * size, size);
}

int64_t int_at(const TensorView& t, int64_t i) {
  return t.dtype == DType::I32 ? reinterpret_cast<const int32_t*>(t.data)[i] : reinterpret_cast<const int64_t*>(t.data)[i];
}

void cast_ints(const TensorView& x, const TensorView& y, int64_t n) {
  if (dtype_is_int(x.dtype) && dtype_is_int(y.dtype)) {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = int_at(x, i);
      if (y.dtype == DType::I64) {
        reinterpret_cast<int64_t*>(y.data)[i] = v;
      } else {
        constexpr int64_t lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
        reinterpret_cast<int32_t*>(y.data)[i] = static_cast<int32_t>(v < lo ? lo : v > hi ? hi : v);
      }
    }
    return;
  }
  // One side is a float dtype: through f32, which holds every bf16 and f16 value exactly.
  std::vector<float> wide(static_cast<size_t>(n));
  load_from_dtype(x.data, wide.size(), x.dtype, wide.data());
  store_as_dtype(wide.data(), wide.size(), y.dtype, y.data);
}

}  // namespace

void run_cpu_ints(const OpCall& c, const CallGeometry& g) {
  const size_t size = static_cast<size_t>(dtype_size(c.out.dtype));
  switch (c.op) {
    case OpKind::cast: return cast_ints(c.in[0], c.out, c.in[0].shape.numel());
    case OpKind::copy:
    case OpKind::reshape:
      if (c.out.data != c.in[0].data) std::memmove(c.out.data, c.in[0].data, static_cast<size_t>(g.n) * size);
      return;
    case OpKind::slice: return copy_block_bytes(c.in[0].data, c.out.data, slice_block(c, g), size);
    case OpKind::concat:
      for (int i = 0; i < c.num_inputs; ++i) copy_block_bytes(c.input(i).data, c.out.data, concat_block(c, g, i), size);
      return;
    default: break;
  }
  throw std::invalid_argument(std::string("run_cpu ") + op_name(c.op) +
                              ": takes no integer values (graph/dtype_rules.h lists the ops that do)");
}

}  // namespace tg::kernels
