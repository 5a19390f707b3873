#include "graph/precision.h"

#include <utility>

namespace tg {

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::bf16: return "bf16";
    case Precision::fp16: return "fp16";
  }
  return "?";
}

bool parse_precision(const std::string& s, Precision& out) {
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::bf16, Precision::fp16})
    if (s == precision_name(p)) {
      out = p;
      return true;
    }
  return false;
}

DType precision_dtype(Precision p) {
  switch (p) {
    case Precision::bf16: return DType::BF16;
    case Precision::fp16: return DType::F16;
    case Precision::fp32:
    case Precision::tf32: return DType::F32;
  }
  return DType::F32;
}

AutocastRule autocast_rule(OpKind op) {
  switch (op) {
    case OpKind::matmul:
    case OpKind::linear:
    case OpKind::linear_add:
    case OpKind::matmul_add:
    case OpKind::matmul_act_grad:
    case OpKind::matmul_bias_grad:
    case OpKind::matmul_heads:
    case OpKind::conv2d:
    case OpKind::conv2d_grad_input:
    case OpKind::conv2d_grad_weight:
    // A GEMM's bias: in the low type like the product it is added to, as the fused linear
    // op (and torch.autocast's linear) computes it; the bias is cast once a step.
    case OpKind::bias_add: return AutocastRule::low;
    // Exponentials, normalizations and sums lose range or accuracy in 16 bits; the
    // losses and updates take f32 by the op table's dtype column anyway.
    case OpKind::softmax:
    case OpKind::softmax_grad:
    case OpKind::exp:
    case OpKind::log:
    case OpKind::log_grad:
    case OpKind::batch_norm:
    case OpKind::batch_norm_grad_x:
    case OpKind::batch_norm_grad_gamma:
    case OpKind::batch_norm_inference:
    case OpKind::layernorm:
    case OpKind::layernorm_grad_x:
    case OpKind::layernorm_grad_gamma:
    case OpKind::layernorm_grad_params:
    case OpKind::reduce_sum:
    case OpKind::reduce_mean:
    case OpKind::mse_loss:
    case OpKind::mse_loss_grad:
    case OpKind::padded_mse_loss:
    case OpKind::padded_mse_loss_grad:
    case OpKind::cross_entropy:
    case OpKind::cross_entropy_grad:
    case OpKind::sgd:
    case OpKind::sgd_momentum:
    case OpKind::sgd_multi:
    case OpKind::sgd_momentum_multi:
    case OpKind::matmul_sgd_momentum: return AutocastRule::f32;
    case OpKind::add:
    case OpKind::sub:
    case OpKind::mul:
    case OpKind::scale:
    case OpKind::relu:
    case OpKind::relu_grad:
    case OpKind::gelu:
    case OpKind::gelu_grad:
    case OpKind::gelu_erf:
    case OpKind::gelu_erf_grad:
    case OpKind::tanh:
    case OpKind::tanh_grad:
    case OpKind::sigmoid:
    case OpKind::sigmoid_grad:
    case OpKind::broadcast:
    case OpKind::transpose:
    case OpKind::reshape:
    case OpKind::fill:
    case OpKind::copy:
    case OpKind::cast:
    case OpKind::max_pool2d:
    case OpKind::max_pool2d_grad:
    case OpKind::avg_pool2d:
    case OpKind::avg_pool2d_grad:
    case OpKind::concat:
    case OpKind::slice:
    case OpKind::fused_elementwise: return AutocastRule::keep;
  }
  return AutocastRule::keep;
}

Value AutocastBuilder::cast_to(const Value& v, DType dt) {
  if (v.dtype == dt) return v;
  const int64_t key = static_cast<int64_t>(v.id) * 4 + static_cast<int64_t>(dt);
  if (auto it = casts_.find(key); it != casts_.end()) return it->second;
  Attrs at;
  at.to = dt;
  const Value c = inner_.apply(OpKind::cast, {v}, at);
  casts_.emplace(key, c);
  return c;
}

Value AutocastBuilder::apply(OpKind op, const std::vector<Value>& inputs, const Attrs& attrs, const std::string& name) {
  if (low_ == DType::F32 || op == OpKind::cast) return inner_.apply(op, inputs, attrs, name);
  DType want = DType::F32;
  switch (autocast_rule(op)) {
    case AutocastRule::low: want = low_; break;
    case AutocastRule::f32: want = DType::F32; break;
    case AutocastRule::keep: {
      bool mixed = false;
      for (const Value& v : inputs) mixed = mixed || v.dtype != inputs.front().dtype;
      if (!mixed) return inner_.apply(op, inputs, attrs, name);
      want = DType::F32;  // the widest of f32 and one 16-bit type
      break;
    }
  }
  std::vector<Value> cast_inputs;
  cast_inputs.reserve(inputs.size());
  for (const Value& v : inputs) cast_inputs.push_back(cast_to(v, want));
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
