#include "graph/precision.h"

#include <utility>
#include <vector>

#include "graph/dtype_rules.h"
#include "graph/enum_names.h"

namespace tg {

namespace {
constexpr const char* kPrecisionNames[] = {"fp32", "tf32", "bf16", "fp16"};  // in Precision's order

// Whether the inputs that `counts` (an input's index -> bool) admits have more than one dtype.
template <typename Counts>
bool mixed_dtypes(const std::vector<Value>& inputs, Counts counts) {
  const Value* first = nullptr;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!counts(static_cast<int>(i))) continue;
    if (!first) first = &inputs[i];
    else if (inputs[i].dtype != first->dtype) return true;
  }
  return false;
}
}  // namespace

const char* precision_name(Precision p) { return enum_name(kPrecisionNames, p); }
bool parse_precision(const std::string& s, Precision& out) { return parse_enum(kPrecisionNames, s, out); }

DType precision_dtype(Precision p) {
  if (p == Precision::bf16) return DType::BF16;
  if (p == Precision::fp16) return DType::F16;
  return DType::F32;
}

// Ops not named here keep their inputs' dtype, as the ops on neither of torch.autocast's
// lists do: elementwise and layout ops, pooling, concat, cast itself.
AutocastRule autocast_rule(OpKind op) {
  // The GEMMs (their kernel family) and convolutions in the low type, and a GEMM's bias
  // with them, as the fused linear op (and torch.autocast's linear) computes it; the
  // bias is cast once a step.
  if (op_in_family(op, "matmul")) return AutocastRule::low;
  // Fused attention too, as torch.autocast runs scaled_dot_product_attention: its kernels
  // keep the softmax's statistics and sums in f32 whatever the storage.
  if (op_in_family(op, "attention")) return AutocastRule::low;
  // Exponentials, normalizations and sums lose range or accuracy in 16 bits; the losses
  // and updates take f32 by the op table's dtype column anyway. Not cross_entropy and its
  // gradient (kTypeLogits): they widen 16-bit logits themselves and compute in f32, to the
  // bits they give on the logits cast to f32, so the logits go in as they are (keep).
  if (op_traits(op).dtype_rule == op_table::kTypeLogits) return AutocastRule::keep;
  // Batch norm, as torch.autocast runs it (on neither of its lists, its kernels take 16-bit
  // activations beside f32 parameters): the activations keep their dtype, the per-channel
  // values are f32, and the sums are f32's in double whatever the storage (graph/op.h
  // kTypeChannels). A 16-bit network then keeps its activations 16-bit between convolutions.
  if (op_traits(op).dtype_rule == op_table::kTypeChannels) return AutocastRule::channels;
  if (op_is_f32_only(op) || op_in_family(op, "softmax") || op_in_family(op, "layernorm")) return AutocastRule::f32;
  switch (op) {
    case OpKind::bias_add:
    case OpKind::conv2d:
    case OpKind::conv2d_grad_input:
    case OpKind::conv2d_grad_weight:
    case OpKind::conv_transpose2d: return AutocastRule::low;
    case OpKind::reduce_sum:
    case OpKind::reduce_mean:
    case OpKind::exp:
    case OpKind::log:
    case OpKind::log_grad: return AutocastRule::f32;
    default: return AutocastRule::keep;
  }
}

Value AutocastBuilder::cast_to(const Value& v, DType dt) {
  if (v.dtype == dt || dtype_is_int(v.dtype)) return v;  // ids and labels stay integers
  const int64_t key = static_cast<int64_t>(v.id) * 8 + static_cast<int64_t>(dt);
  if (auto it = casts_.find(key); it != casts_.end()) return it->second;
  Attrs at;
  at.to = dt;
  const Value c = inner_.apply(OpKind::cast, {v}, at);
  casts_.emplace(key, c);
  return c;
}

Value AutocastBuilder::apply(OpKind op, const std::vector<Value>& inputs, const Attrs& attrs, const std::string& name) {
  if (low_ == DType::F32 || op == OpKind::cast) return inner_.apply(op, inputs, attrs, name);
  if (op_traits(op).dtype_rule == op_table::kTypeLogits) {
    // The logits keep their dtype; the other float inputs (a gradient's dloss) are f32.
    std::vector<Value> in = inputs;
    for (size_t i = 1; i < in.size(); ++i)
      if (!op_input_is_index(op, static_cast<int>(i))) in[i] = cast_to(in[i], DType::F32);
    return inner_.apply(op, in, attrs, name);
  }
  DType want = DType::F32;
  switch (autocast_rule(op)) {
    case AutocastRule::low: want = low_; break;
    case AutocastRule::f32: want = DType::F32; break;
    case AutocastRule::channels: {
      // The activations as they are (f32 where they differ), the per-channel inputs f32.
      const bool mixed = mixed_dtypes(inputs, [op](int i) { return !channel_input(op, i); });
      std::vector<Value> in = inputs;
      for (size_t i = 0; i < in.size(); ++i)
        if (channel_input(op, static_cast<int>(i)) || mixed) in[i] = cast_to(in[i], DType::F32);
      return inner_.apply(op, in, attrs, name);
    }
    case AutocastRule::keep: {
      // Ids, labels and where's condition (graph/dtype_rules.h) keep their dtype and do not
      // count: an f32 mask leaves a bf16 where in bf16.
      const bool mixed = mixed_dtypes(inputs, [&](int i) {
        return !dtype_is_int(inputs[static_cast<size_t>(i)].dtype) && !op_input_is_index(op, i);
      });
      if (!mixed) return inner_.apply(op, inputs, attrs, name);
      want = DType::F32;  // the widest of f32 and one 16-bit type
      break;
    }
  }
  std::vector<Value> cast_inputs;
  cast_inputs.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    cast_inputs.push_back(op_input_is_index(op, static_cast<int>(i)) ? inputs[i] : cast_to(inputs[i], want));
  return inner_.apply(op, cast_inputs, attrs, name);
}

ModelFn with_precision(ModelFn model, Precision p) {
  if (precision_dtype(p) == DType::F32) return model;
  return [model = std::move(model), p](Builder& b) {
    AutocastBuilder autocast(b, p);
    return model(autocast);
  };
}

}  // namespace tg
