// ONNX bool tensors computed at run time, as a Hugging Face model's attention mask makes
// them: Cast of the int64 mask to bool, And with the causal mask, Where into the additive
// mask. The IR has no bool: such a tensor is f32 0 and 1, made and combined by `where`, so
// that Where, a Cast back to a number and the view ops (Reshape, GatherND, ...) take it as
// it is. Operands all constant fold instead (onnx_lm.cpp).
#include <fmt/format.h>

#include "tools/tg-graph/onnx_importer.h"

namespace tg::onnx {

namespace {

constexpr int64_t kOnnxBool = 9;  // TensorProto.BOOL

Sym f32_scalar(float x) {
  Sym s;
  s.constant = true;
  s.c.f = {x};
  return s;
}

// Operand i as f32 0 and 1. A constant: its nonzero elements 1. A computed f32 bool is one
// this file made, already 0 or 1; any other computed bool (a bool graph input, i32) goes
// through where(x, 1, 0), so that a caller feeding 2 for true still gets 1.
Sym as_01(Importer& im, size_t i) {
  const Sym& s = im.in(i);
  if (s.constant) {
    Sym f = s.c.type == Tensor::Type::i64 ? bool_as_f32(s) : s;
    for (float& v : f.c.f) v = v != 0.0f ? 1.0f : 0.0f;
    return f;
  }
  if (s.v.dtype == DType::F32) return s;
  const std::string& name = im.out_name();
  return where_sym(im, {s, im.node_->inputs[i]}, {f32_scalar(1), im.fresh(name + ".one")},
                   {f32_scalar(0), im.fresh(name + ".zero")}, im.fresh(name + ".as_bool"));
}

// The operand positions of a binary node, the constant one (if any) first: as where's
// condition a constant all true or all false makes a choice, no where node.
std::pair<size_t, size_t> constant_first(const Importer& im) {
  return im.in(1).constant && !im.in(0).constant ? std::pair<size_t, size_t>{1, 0} : std::pair<size_t, size_t>{0, 1};
}

// not x: where(x, 0, 1), or the constant folded.
Sym not_sym(Importer& im, size_t i, const std::string& name) {
  const Sym& x = im.in(i);
  if (x.constant) {
    Sym f = as_01(im, i);
    for (float& v : f.c.f) v = v != 0.0f ? 0.0f : 1.0f;
    return f;
  }
  const std::string& out = im.out_name();
  return where_sym(im, {x, im.node_->inputs[i]}, {f32_scalar(0), im.fresh(out + ".zero")},
                   {f32_scalar(1), im.fresh(out + ".one")}, name);
}

void logic_op(Importer& im, const std::string& op) {
  const std::string& name = im.out_name();
  if (op == "Not") return im.alias(not_sym(im, 0, name));
  const auto [c, x] = constant_first(im);
  const Operand cond{im.in(c), im.node_->inputs[c]};
  const Sym x01 = as_01(im, x);
  const std::string x_name = im.fresh(name + ".operand");
  if (op == "And") return im.alias(where_sym(im, cond, {x01, x_name}, {f32_scalar(0), im.fresh(name + ".zero")}, name));
  if (op == "Or") return im.alias(where_sym(im, cond, {f32_scalar(1), im.fresh(name + ".one")}, {x01, x_name}, name));
  const Sym not_x = not_sym(im, x, im.fresh(name + ".not"));  // Xor
  im.alias(where_sym(im, cond, {not_x, im.fresh(name + ".not_operand")}, {x01, x_name}, name));
}

}  // namespace

void add_bool_handlers(std::map<std::string, Handler>& h) {
  for (const char* op : {"And", "Or", "Xor", "Not"}) h[op] = [op](Importer& im) { logic_op(im, op); };
  const Handler cast_number = h.at("Cast");
  h["Cast"] = [cast_number](Importer& im) {
    if (im.in(0).constant || im.attr_i("to", 1) != kOnnxBool) return cast_number(im);
    const std::string& name = im.out_name();
    im.alias(where_sym(im, {im.in(0), im.node_->inputs[0]}, {f32_scalar(1), im.fresh(name + ".one")},
                       {f32_scalar(0), im.fresh(name + ".zero")}, name));
  };
}

}  // namespace tg::onnx
