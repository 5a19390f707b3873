// Where, and masked fill through it (graph/op.h `where`). ONNX's condition is bool: a bool
// graph input imports as i32 (0 or 1; Importer::declare_inputs), a bool constant reads as
// integers (onnx_reader.cpp), and a computed condition must be i32, i64 or f32 (nonzero is
// true), which the IR's dtype rule checks, naming the node.
#include <fmt/format.h>

#include "tools/tg-graph/onnx_importer.h"

namespace tg::onnx {

namespace {

// A constant condition as an IR value: the IR's constants are float parameters, so its
// integers become f32 0 and 1 (where reads nonzero as true, and gives it no gradient).
Value condition_value(Importer& im) {
  const Sym& c = im.in(0);
  if (!c.constant || c.c.type != Tensor::Type::i64) return im.value(0);
  Sym f = c;
  f.c.type = Tensor::Type::f32;
  f.c.type_name = "float";
  f.c.dtype = DType::F32;
  f.c.i.clear();
  for (int64_t x : c.c.i) f.c.f.push_back(x != 0 ? 1.0f : 0.0f);
  return im.value_of(f, im.node_->inputs[0]);
}

// Every element of a constant condition equal: true or false, for the alias it makes.
bool uniform_condition(const Tensor& t, bool& out) {
  const size_t n = t.type == Tensor::Type::i64 ? t.i.size() : t.f.size();
  if (n == 0 || t.type == Tensor::Type::other || t.external) return false;
  auto at = [&](size_t k) { return t.type == Tensor::Type::i64 ? t.i[k] != 0 : t.f[k] != 0.0f; };
  for (size_t k = 1; k < n; ++k)
    if (at(k) != at(0)) return false;
  out = at(0);
  return true;
}

void where_op(Importer& im) {
  const Sym &c = im.in(0), &a = im.in(1), &b = im.in(2);
  if (c.constant && a.constant && b.constant) return im.set_const(fold_where(c.c, a.c, b.c, im.fold_room(), im.where()));
  const Dims out = broadcast_dims(broadcast_dims(c.dims, a.dims, im.where()), b.dims, im.where());
  const std::string& name = im.out_name();
  bool pick = false;
  if (c.constant && uniform_condition(c.c, pick)) {
    const Sym& chosen = pick ? a : b;
    if (chosen.dims == out) return im.alias(chosen);
    return im.set(im.expand_to(im.value(pick ? 1 : 2), chosen.dims, out, name), out);
  }
  const Value cond = condition_value(im);
  im.set(im.apply(OpKind::where, {cond, im.value(1), im.value(2)}, {}, name), out);
}

}  // namespace

void add_mask_handlers(std::map<std::string, Handler>& h) { h["Where"] = where_op; }

}  // namespace tg::onnx
