// The entry layer of the CPU backend: check_op_call (kernels/op_call_check.h, shared
// with the CUDA backend) validates the call and resolves its sizes, then one
// launcher of cpu_kernels.h runs it; a call with bf16 or f16 views runs through f32
// (widen.cpp).
#include <stdexcept>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/op_call_check.h"

namespace tg::kernels {

void run_cpu(const OpCall& c) {
  const CallGeometry g = check_op_call(c, "run_cpu");
  if (call_has_ints(c)) return run_cpu_ints(c, g);
  // A program rounds each instruction to its own dtype (graph/ew_program.h), which a call
  // widened whole would round once.
  if (c.op == OpKind::fused_elementwise) return cpu_fused_elementwise(c);
  if (!call_is_f32(c)) return run_cpu_widened(c);
  const TensorView& x = c.in[0];
  const TensorView& y = c.in[1];
  const float* z = c.in[2].data;
  float* out = c.out.data;
  const int64_t n = g.n;
  switch (c.op) {
    case OpKind::matmul:
      return cpu_matmul(c.attrs->trans_a, c.attrs->trans_b, x.data, x.shape.dims.data(), x.shape.rank, y.data,
                        y.shape.dims.data(), y.shape.rank, out);
    case OpKind::add: return cpu_add(x.data, y.data, out, n);
    case OpKind::sub: return cpu_sub(x.data, y.data, out, n);
    case OpKind::mul: return cpu_mul(x.data, y.data, out, n);
    case OpKind::relu_grad: return cpu_relu_grad(x.data, y.data, out, n);
    case OpKind::gelu_grad: return cpu_gelu_grad(x.data, y.data, out, n);
    case OpKind::softmax_grad: return cpu_softmax_grad_rows(x.data, y.data, out, g.rows, g.cols, c.attrs->alpha);
    case OpKind::scale: return cpu_scale(x.data, c.attrs->alpha, out, n);
    case OpKind::relu: return cpu_relu(x.data, out, n);
    case OpKind::gelu: return cpu_gelu(x.data, out, n);
    case OpKind::tanh: return cpu_tanh(x.data, out, n);
    case OpKind::tanh_grad: return cpu_tanh_grad(x.data, y.data, out, n);
    case OpKind::sigmoid: return cpu_sigmoid(x.data, out, n);
    case OpKind::sigmoid_grad: return cpu_sigmoid_grad(x.data, y.data, out, n);
    case OpKind::exp: return cpu_exp(x.data, out, n);
    case OpKind::log: return cpu_log(x.data, out, n);
    case OpKind::log_grad: return cpu_log_grad(x.data, y.data, out, n);
    case OpKind::gelu_erf: return cpu_gelu_erf(x.data, out, n);
    case OpKind::gelu_erf_grad: return cpu_gelu_erf_grad(x.data, y.data, out, n);
    case OpKind::softmax: return cpu_softmax_rows(x.data, out, g.rows, g.cols, c.attrs->alpha);
    case OpKind::copy:
    case OpKind::cast: return cpu_copy(x.data, out, n);  // other dtypes went through run_cpu_widened
    case OpKind::reshape: return cpu_reshape(x.data, out, n);
    case OpKind::where: return cpu_where(c);
    case OpKind::bias_add: return cpu_bias_add(x.data, y.data, out, g.rows, g.cols);
    case OpKind::layernorm:
    case OpKind::layernorm_cast:  // to f32 here; other dtypes went through run_cpu_widened
      return cpu_layernorm_rows(x.data, y.data, z, out, g.rows, g.cols, c.attrs->eps);
    case OpKind::layernorm_grad_x:
      return cpu_layernorm_grad_x_rows(x.data, y.data, z, out, g.rows, g.cols, c.attrs->eps);
    case OpKind::layernorm_grad_x_acc:
      return cpu_layernorm_grad_x_rows(x.data, y.data, z, out, g.rows, g.cols, c.attrs->eps, c.in[3].data);
    case OpKind::layernorm_grad_gamma:
      return cpu_layernorm_grad_gamma(x.data, y.data, out, g.rows, g.cols, c.attrs->eps);
    case OpKind::reduce_sum: return cpu_reduce_sum(x.data, out, g.outer, g.len, g.inner);
    case OpKind::reduce_mean: return cpu_reduce_mean(x.data, out, g.outer, g.len, g.inner);
    case OpKind::broadcast: return cpu_broadcast(x.data, out, g.outer, g.len, g.inner);
    case OpKind::transpose:
      return cpu_transpose(x.data, x.shape.dims.data(), x.shape.rank, c.attrs->perm.data(), out);
    case OpKind::mse_loss: return cpu_mse_loss(x.data, y.data, out, n);
    case OpKind::mse_loss_grad: return cpu_mse_loss_grad(x.data, y.data, z, out, n);
    case OpKind::padded_mse_loss: return cpu_padded_mse_loss(x.data, y.data, z, out, n);
    case OpKind::padded_mse_loss_grad: return cpu_padded_mse_loss_grad(x.data, y.data, z, c.in[3].data, out, n);
    case OpKind::cross_entropy:
      return cpu_cross_entropy(x.data, y, out, g.rows, g.cols, g.len, c.attrs->ignore_index);
    case OpKind::cross_entropy_grad:
      return cpu_cross_entropy_grad(x.data, y, z, out, g.rows, g.cols, g.len, c.attrs->ignore_index);
    case OpKind::embedding: return cpu_embedding(x.data, g.len, g.cols, y, out, g.rows);
    case OpKind::embedding_grad: return cpu_embedding_grad(x.data, y, out, g.len, g.cols, g.rows);
    case OpKind::dropout: return cpu_dropout(x.data, y, out, n, *c.attrs);
    case OpKind::rng_advance: return cpu_rng_advance(x);
    case OpKind::fill: return cpu_fill(out, c.attrs->value, n);
    case OpKind::sgd:
      if (op_update_guarded(c.op, c.num_inputs)) return cpu_multi_update(c);
      return cpu_sgd(x.data, y.data, c.attrs->lr, n);
    case OpKind::sgd_momentum:
      if (op_update_guarded(c.op, c.num_inputs)) return cpu_multi_update(c);
      return cpu_sgd_momentum(x.data, y.data, c.in[2].data, c.attrs->lr, c.attrs->momentum, n);
    case OpKind::unscale: return cpu_unscale(x.data, y.data, out, n);
    case OpKind::found_inf: return cpu_found_inf(x.data, y.data, out, n);
    case OpKind::update_scale: return cpu_update_scale(x.data, y.data, *c.attrs);
    case OpKind::matmul_sgd_momentum: return cpu_matmul_sgd_momentum(c);
    case OpKind::linear:
    case OpKind::linear_add:
    case OpKind::matmul_add:
    case OpKind::matmul_act_grad:
    case OpKind::matmul_bias_grad: return cpu_gemm_op(c);
    case OpKind::matmul_heads: return cpu_matmul_heads(c);
    case OpKind::attention:
    case OpKind::attention_lse:
    case OpKind::attention_grad:
    case OpKind::attention_fwd_lse: return cpu_attention_op(c);
    case OpKind::layernorm_grad_params:
      return cpu_layernorm_grad_params(x.data, y.data, out, c.out2.data, g.rows, g.cols, c.attrs->eps);
    case OpKind::fused_elementwise: return cpu_fused_elementwise(c);
    case OpKind::concat: return cpu_concat(c, g);
    case OpKind::batch_norm:
    case OpKind::batch_norm_grad_x:
    case OpKind::batch_norm_grad_gamma:
    case OpKind::batch_norm_grad_beta:
    case OpKind::batch_norm_stats_update:
    case OpKind::batch_norm_inference:
    case OpKind::batch_norm_fold:
    case OpKind::batch_norm_moments:
    case OpKind::batch_norm_stats_blend:
    case OpKind::batch_norm_grad: return cpu_batch_norm_op(c, g.bn);
    case OpKind::slice: return cpu_slice(c, g);
    case OpKind::conv2d:
    case OpKind::conv2d_grad_input:
    case OpKind::conv_transpose2d:
    case OpKind::conv2d_grad_weight:
    case OpKind::conv2d_bias_act:
    case OpKind::conv2d_bias_add_act:
    case OpKind::max_pool2d:
    case OpKind::max_pool2d_grad:
    case OpKind::avg_pool2d:
    case OpKind::avg_pool2d_grad: return cpu_conv_op(c, g.conv);
    case OpKind::sgd_multi:
    case OpKind::sgd_momentum_multi:
    case OpKind::sgd_multi_cast:
    case OpKind::sgd_momentum_multi_cast: return cpu_multi_update(c);
    case OpKind::adamw:
      if (op_update_guarded(c.op, c.num_inputs)) return cpu_adamw_multi(c);
      return cpu_adamw(x.data, y.data, c.in[2].data, c.in[3].data, c.in[4].data, *c.attrs, n);
    case OpKind::adamw_multi:
    case OpKind::adamw_multi_cast: return cpu_adamw_multi(c);
    case OpKind::global_norm: return cpu_global_norm(c, out);
    case OpKind::clip_by_norm: return cpu_clip_by_norm(x.data, y.data, c.attrs->max_norm, out, n);
    case OpKind::all_reduce: return cpu_all_reduce_alone(x.data, out, n);
  }
  throw std::invalid_argument(std::string("run_cpu ") + op_name(c.op) + ": op has no CPU kernel");
}

}  // namespace tg::kernels
