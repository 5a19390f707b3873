// Constant folding at import: the shape arithmetic and constant scalars that
// exporters write (Shape -> Gather -> Concat -> Reshape, Sqrt of a head size,
// Cast), and the weights a model transposes, scales or joins, computed once, so that
// the IR sees constants. Sizes are bounded by what the import has left of
// ImportOptions::max_fold_bytes: a constant over it is refused before it is allocated.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "graph/errors.h"
#include "graph/float_formats.h"
#include "graph/quote.h"
#include "tools/tg-graph/onnx_importer.h"

namespace tg::onnx {

void check_fold_size(const Dims& d, int64_t room, const std::string& where) {
  int64_t n = 1;
  for (int64_t x : d) {
    if (x < 0)
      graph_error("{}: folding it would make a constant of shape {}, with a negative dim {}; no tensor has one",
                  where, dims_str(d), x);
    if (x > 0 && n > room / x)
      graph_error("{}: folding it would make a constant of shape {}, over the {} elements left of the limit on "
                  "the constants the import computes; raise it (tg-graph import --max-fold-mib) if the machine "
                  "has the memory", where, dims_str(d), room);
    n *= x;
  }
}

namespace {

std::vector<int64_t> strides(const Dims& d) {
  std::vector<int64_t> s(d.size(), 1);
  for (size_t i = d.size(); i-- > 1;) s[i - 1] = s[i] * d[i];
  return s;
}

}  // namespace

int64_t broadcast_index(int64_t flat, const Dims& out, const Dims& d) {
  const size_t off = out.size() - d.size();
  const std::vector<int64_t> so = strides(out), sd = strides(d);
  int64_t idx = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t coord = (flat / so[i]) % out[i];
    if (i >= off && d[i - off] != 1) idx += coord * sd[i - off];
  }
  return idx;
}

namespace {

// Integers are shape arithmetic: a result that wraps would be a wrong dim, so it is
// refused (signed overflow is undefined besides). Floats follow IEEE; an inf they
// make is refused where it is used.
int64_t int_op(const std::string& op, int64_t a, int64_t b, const std::string& where) {
  int64_t r = 0;
  bool over = false;
  if (op == "Add") over = __builtin_add_overflow(a, b, &r);
  else if (op == "Sub") over = __builtin_sub_overflow(a, b, &r);
  else if (op == "Mul") over = __builtin_mul_overflow(a, b, &r);
  else if (op == "Div") {
    if (b == 0) graph_error("{}: integer division by zero", where);
    over = a == std::numeric_limits<int64_t>::min() && b == -1;
    r = over ? 0 : a / b;
  } else if (op == "Mod" || op == "Fmod") {  // Mod: the divisor's sign, as Python's %; Fmod: the dividend's, as C's
    if (b == 0) graph_error("{}: integer modulo by zero", where);
    r = b == -1 ? 0 : a % b;
    if (op == "Mod" && r != 0 && (r < 0) != (b < 0)) r += b;
  } else if (op == "Pow") {
    const double p = std::pow(static_cast<double>(a), static_cast<double>(b));
    over = !(std::fabs(p) < 0x1p63);
    r = over ? 0 : static_cast<int64_t>(p);
  } else {
    graph_error("{}: cannot fold {}", where, op);
  }
  if (over) graph_error("{}: the integer {} of {} and {} overflows int64", where, op, a, b);
  return r;
}

template <typename T>
T apply_op(const std::string& op, T a, T b, const std::string& where) {
  if constexpr (std::is_integral_v<T>) {
    return int_op(op, a, b, where);
  } else {
    if (op == "Add") return a + b;
    if (op == "Sub") return a - b;
    if (op == "Mul") return a * b;
    if (op == "Div") return a / b;
    if (op == "Fmod") return static_cast<T>(std::fmod(static_cast<double>(a), static_cast<double>(b)));
    if (op == "Pow") return static_cast<T>(std::pow(static_cast<double>(a), static_cast<double>(b)));
    graph_error("{}: cannot fold {}", where, op);
  }
}

template <typename T>
std::vector<T> binary_data(const std::string& op, const std::vector<T>& a, const Dims& da, const std::vector<T>& b,
                           const Dims& db, const Dims& out, const std::string& where) {
  std::vector<T> r(static_cast<size_t>(numel(out, where)));
  for (int64_t i = 0; i < static_cast<int64_t>(r.size()); ++i)
    r[static_cast<size_t>(i)] = apply_op(op, a[static_cast<size_t>(broadcast_index(i, out, da))],
                                         b[static_cast<size_t>(broadcast_index(i, out, db))], where);
  return r;
}

void require_known(const Tensor& t, const std::string& where) {
  if (t.type == Tensor::Type::other || t.external)
    graph_error("{}: constant {} is {}{}; only float and integer constants fold", where, quote_name(t.name),
                t.type_name,
                t.external ? " in an external file" : "");
}

}  // namespace

Tensor i64_tensor(const Dims& dims, std::vector<int64_t> values) {
  Tensor t;
  t.dims = dims;
  t.type = Tensor::Type::i64;
  t.type_name = "int64";
  t.i = std::move(values);
  return t;
}

bool uniform_value(const Tensor& t, float& out) {
  if (t.type != Tensor::Type::f32 || t.f.empty() || t.external) return false;
  for (float x : t.f)
    if (!(x == t.f[0])) return false;
  out = t.f[0];
  return true;
}

Tensor fold_binary(const std::string& op, const Tensor& a, const Tensor& b, int64_t room, const std::string& where) {
  require_known(a, where);
  require_known(b, where);
  if (a.type != b.type) graph_error("{}: operands are {} and {}; ONNX requires one type", where, a.type_name, b.type_name);
  Tensor r;
  r.dims = broadcast_dims(a.dims, b.dims, where);
  check_fold_size(r.dims, room, where);
  r.type = a.type;
  r.type_name = a.type_name;
  if (a.type == Tensor::Type::f32) r.f = binary_data(op, a.f, a.dims, b.f, b.dims, r.dims, where);
  else r.i = binary_data(op, a.i, a.dims, b.i, b.dims, r.dims, where);
  return r;
}

Tensor fold_where(const Tensor& cond, const Tensor& a, const Tensor& b, int64_t room, const std::string& where) {
  require_known(cond, where);
  require_known(a, where);
  require_known(b, where);
  if (a.type != b.type) graph_error("{}: operands are {} and {}; ONNX requires one type", where, a.type_name, b.type_name);
  Tensor r;
  r.dims = broadcast_dims(broadcast_dims(cond.dims, a.dims, where), b.dims, where);
  check_fold_size(r.dims, room, where);
  r.type = a.type;
  r.type_name = a.type_name;
  r.dtype = a.dtype;
  const int64_t n = numel(r.dims, where);
  for (int64_t k = 0; k < n; ++k) {
    const size_t c = static_cast<size_t>(broadcast_index(k, r.dims, cond.dims));
    const bool t = cond.type == Tensor::Type::i64 ? cond.i[c] != 0 : cond.f[c] != 0.0f;
    const Tensor& from = t ? a : b;
    const size_t i = static_cast<size_t>(broadcast_index(k, r.dims, from.dims));
    if (r.type == Tensor::Type::f32) r.f.push_back(from.f[i]);
    else r.i.push_back(from.i[i]);
  }
  return r;
}

Tensor fold_unary(const std::string& op, const Tensor& a, const std::string& where) {
  require_known(a, where);
  Tensor r = a;
  if (a.type == Tensor::Type::i64) {
    if (op != "Neg") graph_error("{}: cannot fold {} of integers", where, op);
    for (int64_t& x : r.i) {
      if (x == std::numeric_limits<int64_t>::min()) graph_error("{}: the integer Neg of {} overflows int64", where, x);
      x = -x;
    }
    return r;
  }
  for (float& x : r.f) {
    if (op == "Sqrt") x = std::sqrt(x);
    else if (op == "Neg") x = -x;
    else if (op == "Reciprocal") x = 1.0f / x;
    else if (op == "Tanh") x = std::tanh(x);
    else if (op == "Erf") x = std::erf(x);
    else if (op == "Sigmoid") x = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(x))));
    else if (op == "Exp") x = std::exp(x);
    else if (op == "Log") x = std::log(x);
    else graph_error("{}: cannot fold {}", where, op);
  }
  return r;
}

Tensor fold_transpose(const Tensor& a, const std::vector<int64_t>& perm) {
  Tensor r = a;
  for (size_t i = 0; i < perm.size(); ++i) r.dims[i] = a.dims[static_cast<size_t>(perm[i])];
  const std::vector<int64_t> si = strides(a.dims), so = strides(r.dims);
  const int64_t n = static_cast<int64_t>(a.type == Tensor::Type::f32 ? a.f.size() : a.i.size());
  auto src = [&](int64_t flat) {
    int64_t idx = 0;
    for (size_t i = 0; i < perm.size(); ++i) idx += ((flat / so[i]) % r.dims[i]) * si[static_cast<size_t>(perm[i])];
    return idx;
  };
  for (int64_t k = 0; k < n; ++k) {
    if (a.type == Tensor::Type::f32) r.f[static_cast<size_t>(k)] = a.f[static_cast<size_t>(src(k))];
    else if (a.type == Tensor::Type::i64) r.i[static_cast<size_t>(k)] = a.i[static_cast<size_t>(src(k))];
  }
  return r;
}

Tensor fold_cast(const Tensor& a, int64_t to, const std::string& where) {
  require_known(a, where);
  Tensor r;
  r.dims = a.dims;
  DType low = DType::F32;
  if (to == 1 || to == 11 || (onnx_float_dtype(to, low) && low != DType::F32)) {  // FLOAT, DOUBLE, FLOAT16, BFLOAT16
    r.type = Tensor::Type::f32;
    r.type_name = low == DType::F32 ? "float" : low == DType::F16 ? "float16" : "bfloat16";
    r.dtype = low;
    if (a.type == Tensor::Type::f32) r.f = a.f;
    else r.f.assign(a.i.begin(), a.i.end());
    for (float& x : r.f) x = round_to_dtype(x, low);
  } else if (to == 7 || to == 6) {  // INT64, INT32
    r.type = Tensor::Type::i64;
    r.type_name = "int64";
    if (a.type == Tensor::Type::i64) r.i = a.i;
    else
      for (float x : a.f) {
        if (!(std::fabs(x) < 0x1p63f))
          graph_error("{}: casts {} to an integer, which int64 cannot hold", where, x);
        r.i.push_back(static_cast<int64_t>(x));
      }
  } else if (to == 9) {  // BOOL: int64 0 and 1, as the reader holds bool constants; NaN is true
    r = i64_tensor(a.dims, {});
    r.type_name = "bool";
    if (a.type == Tensor::Type::i64)
      for (int64_t x : a.i) r.i.push_back(x != 0 ? 1 : 0);
    else
      for (float x : a.f) r.i.push_back(x != 0.0f ? 1 : 0);
  } else {
    graph_error("{}: casts a constant to ONNX type {}; only float, integer and bool types fold", where, to);
  }
  return r;
}

Tensor fold_gather(const Tensor& data, const Tensor& idx, int64_t axis, int64_t room, const std::string& where) {
  require_known(data, where);
  if (idx.type != Tensor::Type::i64) graph_error("{}: indices are {}, expected integers", where, idx.type_name);
  const size_t ax = static_cast<size_t>(normalize_axis(axis, data.dims.size(), where));
  Dims out(data.dims.begin(), data.dims.begin() + static_cast<std::ptrdiff_t>(ax));
  out.insert(out.end(), idx.dims.begin(), idx.dims.end());
  out.insert(out.end(), data.dims.begin() + static_cast<std::ptrdiff_t>(ax) + 1, data.dims.end());
  check_fold_size(out, room, where);
  const int64_t outer = numel(Dims(data.dims.begin(), data.dims.begin() + static_cast<std::ptrdiff_t>(ax)), where);
  const int64_t inner = numel(Dims(data.dims.begin() + static_cast<std::ptrdiff_t>(ax) + 1, data.dims.end()), where);
  const int64_t extent = data.dims[ax];
  Tensor r;
  r.dims = out;
  r.type = data.type;
  r.type_name = data.type_name;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j : idx.i) {
      const int64_t k = j < 0 ? j + extent : j;
      if (k < 0 || k >= extent) graph_error("{}: index {} is out of range for dim {}", where, j, extent);
      for (int64_t in = 0; in < inner; ++in) {
        const size_t src = static_cast<size_t>((o * extent + k) * inner + in);
        if (data.type == Tensor::Type::f32) r.f.push_back(data.f[src]);
        else r.i.push_back(data.i[src]);
      }
    }
  return r;
}

Tensor fold_concat(const std::vector<const Tensor*>& parts, int64_t axis, int64_t room, const std::string& where) {
  if (parts.empty()) graph_error("{}: concatenates nothing", where);
  for (const Tensor* p : parts) require_known(*p, where);
  const Tensor& first = *parts[0];
  const size_t ax = static_cast<size_t>(normalize_axis(axis, first.dims.size(), where));
  Tensor r;
  r.dims = first.dims;
  r.dims[ax] = 0;
  r.type = first.type;
  r.type_name = first.type_name;
  for (const Tensor* p : parts) {
    if (p->type != first.type || p->dims.size() != first.dims.size())
      graph_error("{}: concatenates constants of different types or ranks", where);
    for (size_t i = 0; i < first.dims.size(); ++i)
      if (i != ax && p->dims[i] != first.dims[i]) graph_error("{}: concatenates constants of different shapes", where);
    r.dims[ax] += p->dims[ax];
  }
  check_fold_size(r.dims, room, where);
  const int64_t outer = numel(Dims(first.dims.begin(), first.dims.begin() + static_cast<std::ptrdiff_t>(ax)), where);
  for (int64_t o = 0; o < outer; ++o)
    for (const Tensor* p : parts) {
      const int64_t chunk = numel(p->dims, where) / std::max<int64_t>(outer, 1);
      for (int64_t k = 0; k < chunk; ++k) {
        const size_t src = static_cast<size_t>(o * chunk + k);
        if (r.type == Tensor::Type::f32) r.f.push_back(p->f[src]);
        else r.i.push_back(p->i[src]);
      }
    }
  return r;
}

// ---- constant-producing ops ----------------------------------------------------

void add_constant_handlers(std::map<std::string, Handler>& h) {
  h["Constant"] = [](Importer& im) {
    const auto& a = im.node_->attrs;
    Tensor t;
    if (auto it = a.find("value"); it != a.end()) t = it->second.t;
    else if (auto f = a.find("value_float"); f != a.end()) t.f = {f->second.f};
    else if (auto fs = a.find("value_floats"); fs != a.end()) {
      t.f = fs->second.floats;
      t.dims = {static_cast<int64_t>(t.f.size())};
    } else if (auto i = a.find("value_int"); i != a.end()) t = i64_tensor({}, {i->second.i});
    else if (auto is = a.find("value_ints"); is != a.end())
      t = i64_tensor({static_cast<int64_t>(is->second.ints.size())}, is->second.ints);
    else im.refuse("holds a sparse or string constant; twograph reads dense float and integer constants");
    im.set_const(t);
  };
  h["Identity"] = [](Importer& im) { im.alias(im.in(0)); };
  // Dropout imports for inference, the identity (its mask output, all ones, is not mapped);
  // training_mode true is refused, since an import makes an inference graph.
  h["Dropout"] = [](Importer& im) {
    if (im.has_input(2)) {
      const Tensor& mode = im.constant(2, "training_mode");
      if ((mode.type == Tensor::Type::i64 && !mode.i.empty() && mode.i[0] != 0) ||
          mode.type == Tensor::Type::other)
        im.refuse("is a dropout in training mode (training_mode true); an imported model is an inference graph, "
                  "where dropout is the identity: export the model after model.eval() (a model that trains with "
                  "dropout builds it in C++, graph/dropout.h)");
    }
    im.alias(im.in(0));
  };
  h["Cast"] = [](Importer& im) {
    const int64_t to = im.attr_i("to", 1);
    if (im.in(0).constant) return im.set_const(fold_cast(im.in(0).c, to, im.where()));
    DType dt = DType::F32;
    if (!onnx_value_dtype(to, dt))
      im.refuse(fmt::format("casts a tensor to ONNX type {}; the IR's values are float (1), float16 (10), bfloat16 "
                            "(16), int32 (6) and int64 (7)", to));
    const Value x = im.value(0);
    if (x.dtype == dt) return im.alias(im.in(0));
    Attrs at;
    at.to = dt;
    im.set(im.apply(OpKind::cast, {x}, at, im.out_name()), im.in(0).dims);
  };
  h["Shape"] = [](Importer& im) {
    const Dims& d = im.in(0).dims;
    const int64_t r = static_cast<int64_t>(d.size());
    auto clamp = [r](int64_t x) { return std::min(std::max(x < 0 ? x + r : x, int64_t{0}), r); };
    const int64_t start = clamp(im.attr_i("start", 0)), end = clamp(im.attr_i("end", r));
    std::vector<int64_t> v;
    for (int64_t i = start; i < end; ++i) v.push_back(d[static_cast<size_t>(i)]);
    im.set_const(i64_tensor({static_cast<int64_t>(v.size())}, v));
  };
  h["Gather"] = [](Importer& im) {
    if (im.in(0).constant && im.in(1).constant)
      return im.set_const(
          fold_gather(im.in(0).c, im.constant(1, "indices"), im.attr_i("axis", 0), im.fold_room(), im.where()));
    // Indices computed at run time (token ids): rows of a [vocabulary, dim] table, an
    // embedding lookup. Negative indices (ONNX counts them from the end) are ids outside
    // the table to the IR's embedding.
    const Dims& table = im.in(0).dims;
    const int64_t axis = im.attr_i("axis", 0);
    if (table.size() != 2 || (axis != 0 && axis != -2))
      im.refuse(fmt::format("gathers along axis {} of a {} tensor with computed indices; the IR's embedding takes "
                            "rows (axis 0) of a 2-D table", axis, dims_str(table)));
    if (im.in(1).constant)
      im.refuse("gathers constant indices from a computed tensor; the IR's embedding takes its ids as an input");
    const Value ids = im.value(1);
    if (!dtype_is_int(ids.dtype))
      im.refuse(fmt::format("its indices are {}; an embedding's ids are int32 or int64", dtype_name(ids.dtype)));
    Dims out = im.in(1).dims;
    out.push_back(table[1]);
    im.set(im.apply(OpKind::embedding, {im.value(0), ids}, {}, im.out_name()), out);
  };
  h["ConstantOfShape"] = [](Importer& im) {
    const std::vector<int64_t> shape = im.ints_input(0, "shape");
    check_fold_size(shape, im.fold_room(), im.where());
    Tensor t;
    auto v = im.node_->attrs.find("value");
    if (v != im.node_->attrs.end()) t = v->second.t;
    else t.f = {0.0f};
    if (numel(t.dims, im.where()) != 1) im.refuse("value must hold one element");
    const Tensor one = t;
    t.dims = shape;
    const size_t n = static_cast<size_t>(numel(shape, im.where()));
    if (one.type == Tensor::Type::f32) t.f.assign(n, one.f[0]);
    else if (one.type == Tensor::Type::i64) t.i.assign(n, one.i[0]);
    else im.refuse("value is of a type twograph does not fold");
    im.set_const(t);
  };
}

}  // namespace tg::onnx
