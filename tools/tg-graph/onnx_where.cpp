// Where, and masked fill through it (graph/op.h `where`). ONNX's condition is bool: a bool
// graph input imports as i32 (0 or 1; Importer::declare_inputs), a bool constant reads as
// integers (onnx_reader.cpp), a bool computed at run time is f32 0 or 1 (onnx_bool.cpp), and
// a computed condition must be i32, i64 or f32 (nonzero is true), which the IR's dtype rule
// checks, naming the node.
#include <fmt/format.h>

#include "tools/tg-graph/onnx_importer.h"

namespace tg::onnx {

namespace {

// A constant condition as an IR value: the IR's constants are float parameters, so its
// integers become f32 0 and 1 (where reads nonzero as true, and gives it no gradient).
Value condition_value(Importer& im, const Operand& c) {
  if (!c.sym.constant || c.sym.c.type != Tensor::Type::i64) return im.value_of(c.sym, c.name);
  return im.value_of(bool_as_f32(c.sym), c.name);
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
  const std::vector<std::string>& ins = im.node_->inputs;
  im.alias(where_sym(im, {c, ins[0]}, {a, ins[1]}, {b, ins[2]}, im.out_name()));
}

}  // namespace

Sym bool_as_f32(const Sym& s) {
  Sym f = s;
  f.c.type = Tensor::Type::f32;
  f.c.type_name = "float";
  f.c.dtype = DType::F32;
  f.c.i.clear();
  f.c.f.clear();
  for (int64_t x : s.c.i) f.c.f.push_back(x != 0 ? 1.0f : 0.0f);
  return f;
}

Sym where_sym(Importer& im, const Operand& c, const Operand& a, const Operand& b, const std::string& name) {
  const Dims out = broadcast_dims(broadcast_dims(c.sym.dims, a.sym.dims, im.where()), b.sym.dims, im.where());
  bool pick = false;
  if (c.sym.constant && uniform_condition(c.sym.c, pick)) {
    const Operand& chosen = pick ? a : b;
    if (chosen.sym.dims == out) return chosen.sym;
    Sym r;
    r.v = im.expand_to(im.value_of(chosen.sym, chosen.name), chosen.sym.dims, out, name);
    r.dims = out;
    return r;
  }
  Sym r;
  r.v = im.apply(OpKind::where, {condition_value(im, c), im.value_of(a.sym, a.name), im.value_of(b.sym, b.name)}, {},
                 name);
  r.dims = out;
  return r;
}

void add_mask_handlers(std::map<std::string, Handler>& h) {
  h["Where"] = where_op;
  add_bool_handlers(h);
}

}  // namespace tg::onnx
