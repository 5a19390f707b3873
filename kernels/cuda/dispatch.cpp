// The entry layer of the CUDA backend: check_op_call (kernels/op_call_check.h, shared
// with the CPU backend) validates the call and resolves its sizes, then one launcher
// enqueues it on ctx.stream, with the launch choices of ctx.options.
#include <stdexcept>
#include <string>

#include "kernels/cuda/attention_cudnn.h"
#include "kernels/cuda/conv_cudnn.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/dtype_support.h"
#include "kernels/op_call_check.h"

namespace tg::kernels {

void run_cuda(const OpCall& c, const CudaExecContext& ctx) {
  const CallGeometry g = check_op_call(c, "run_cuda");
  if (!cuda::has_kernel(c.op, call_dtype(c)))
    throw std::invalid_argument(std::string("run_cuda ") + op_name(c.op) + ": no CUDA kernel for " +
                                dtype_name(call_dtype(c)) + " tensors; run it on the CPU backend or in f32");
  const cuda::LaunchScope launches(ctx.options.pdl);
  const cudaStream_t s = ctx.stream;
  const TensorView& x = c.in[0];
  const TensorView& y = c.in[1];
  const float* z = c.in[2].data;
  float* out = c.out.data;
  const int64_t n = g.n;
  const DType dt = call_dtype(c);
  switch (c.op) {
    case OpKind::matmul:
    case OpKind::linear:
    case OpKind::linear_add:
    case OpKind::matmul_add:
    case OpKind::matmul_act_grad:
    case OpKind::matmul_bias_grad: return cuda::gemm_op(c, ctx);
    case OpKind::matmul_heads: return cuda::gemm_heads_op(c, ctx);
    case OpKind::concat: return cuda::concat(c, g, s);
    case OpKind::batch_norm:
    case OpKind::batch_norm_grad_x:
    case OpKind::batch_norm_grad_gamma:
    case OpKind::batch_norm_grad_beta:
    case OpKind::batch_norm_stats_update:
    case OpKind::batch_norm_inference:
    case OpKind::batch_norm_fold:
    case OpKind::batch_norm_moments:
    case OpKind::batch_norm_stats_blend:
    case OpKind::batch_norm_grad: return cuda::batch_norm_op(c, g.bn, ctx.scratch, ctx.scratch_bytes, s);
    case OpKind::slice: return cuda::slice(c, g, s);
    case OpKind::conv2d:
    case OpKind::conv2d_grad_input:
    case OpKind::conv_transpose2d:
    case OpKind::conv2d_grad_weight:
    case OpKind::conv2d_bias_act:
    case OpKind::conv2d_bias_add_act:
      if (cuda::run_conv_dnn(c, g.conv, ctx)) return;
      return cuda::conv_op(c, g.conv, s);
    case OpKind::max_pool2d:
    case OpKind::max_pool2d_grad:
    case OpKind::avg_pool2d:
    case OpKind::avg_pool2d_grad: return cuda::conv_op(c, g.conv, s);
    case OpKind::add: return cuda::add(x.data, y.data, out, n, s, dt);
    case OpKind::sub: return cuda::sub(x.data, y.data, out, n, s, dt);
    case OpKind::mul: return cuda::mul(x.data, y.data, out, n, s, dt);
    case OpKind::relu_grad: return cuda::relu_grad(x.data, y.data, out, n, s, dt);
    case OpKind::gelu_grad: return cuda::gelu_grad(x.data, y.data, out, n, s, dt);
    case OpKind::softmax_grad: return cuda::softmax_op(c, g, s);
    case OpKind::scale: return cuda::scale(x.data, c.attrs->alpha, out, n, s, dt);
    case OpKind::relu: return cuda::relu(x.data, out, n, s, dt);
    case OpKind::gelu: return cuda::gelu(x.data, out, n, s, dt);
    case OpKind::tanh: return cuda::tanh_op(x.data, out, n, s, dt);
    case OpKind::tanh_grad: return cuda::tanh_grad(x.data, y.data, out, n, s, dt);
    case OpKind::sigmoid: return cuda::sigmoid(x.data, out, n, s, dt);
    case OpKind::sigmoid_grad: return cuda::sigmoid_grad(x.data, y.data, out, n, s, dt);
    case OpKind::exp: return cuda::exp_op(x.data, out, n, s, dt);
    case OpKind::log: return cuda::log_op(x.data, out, n, s, dt);
    case OpKind::log_grad: return cuda::log_grad(x.data, y.data, out, n, s, dt);
    case OpKind::gelu_erf: return cuda::gelu_erf(x.data, out, n, s, dt);
    case OpKind::gelu_erf_grad: return cuda::gelu_erf_grad(x.data, y.data, out, n, s, dt);
    case OpKind::softmax: return cuda::softmax_op(c, g, s);
    case OpKind::attention:
    case OpKind::attention_lse:
    case OpKind::attention_grad:
    case OpKind::attention_fwd_lse:
      if (cuda::run_attention_dnn(c, ctx)) return;
      return cuda::attention_op(c, s);
    case OpKind::copy:
    case OpKind::reshape: return cuda::copy(x.data, out, n, s, dt);
    case OpKind::cast: return cuda::cast(x, c.out, s);
    case OpKind::where: return cuda::where(c, s);  // reshape given its own memory copies
    case OpKind::bias_add: return cuda::bias_add(x.data, y.data, out, g.rows, g.cols, s, dt);
    case OpKind::layernorm:
    case OpKind::layernorm_cast:
    case OpKind::layernorm_grad_x:
    case OpKind::layernorm_grad_x_acc: return cuda::layernorm_op(c, g, s);
    case OpKind::layernorm_grad_gamma: return cuda::layernorm_params_op(c, g, ctx);
    case OpKind::reduce_sum:
    case OpKind::reduce_mean: return cuda::reduce_op(c, g, ctx);
    case OpKind::broadcast: return cuda::broadcast(x.data, out, g.outer, g.len, g.inner, s, dt);
    case OpKind::transpose:
      return cuda::transpose(x.data, x.shape.dims.data(), x.shape.rank, c.attrs->perm.data(), out, s, dt);
    case OpKind::mse_loss: return cuda::mse_loss(x.data, y.data, out, n, ctx.scratch, ctx.scratch_bytes, s);
    case OpKind::mse_loss_grad: return cuda::mse_loss_grad(x.data, y.data, z, out, n, s);
    case OpKind::padded_mse_loss:
      return cuda::padded_mse_loss(x.data, y.data, z, out, n, ctx.scratch, ctx.scratch_bytes, s);
    case OpKind::padded_mse_loss_grad: return cuda::padded_mse_loss_grad(x.data, y.data, z, c.in[3].data, out, n, s);
    case OpKind::cross_entropy:
      return cuda::cross_entropy(x.data, y, out, g.rows, g.cols, g.len, c.attrs->ignore_index, ctx.scratch,
                                 ctx.scratch_bytes, s, dt);
    case OpKind::cross_entropy_grad:
      return cuda::cross_entropy_grad(x.data, y, z, out, g.rows, g.cols, g.len, c.attrs->ignore_index, s, dt);
    case OpKind::embedding: return cuda::embedding(x, y, c.out, g, s);
    case OpKind::embedding_grad: return cuda::embedding_grad(x, y, c.out, g, s);
    case OpKind::dropout: return cuda::dropout(x, y, c.out, n, *c.attrs, s);
    case OpKind::rng_advance: return cuda::rng_advance(x, s);
    case OpKind::fill: return cuda::fill(out, c.attrs->value, n, s);
    case OpKind::sgd:
      if (op_update_guarded(c.op, c.num_inputs)) return cuda::multi_update(c, s);
      return cuda::sgd(x.data, y.data, c.attrs->lr, n, s);
    case OpKind::unscale: return cuda::unscale(x.data, y.data, out, n, s);
    case OpKind::found_inf: return cuda::found_inf(x.data, y.data, out, n, s);
    case OpKind::update_scale: return cuda::update_scale(x.data, y.data, *c.attrs, s);
    case OpKind::sgd_momentum:
      if (op_update_guarded(c.op, c.num_inputs)) return cuda::multi_update(c, s);
      return cuda::sgd_momentum(x.data, y.data, c.in[2].data, c.attrs->lr, c.attrs->momentum, n, s);
    case OpKind::matmul_sgd_momentum:
      if (ctx.update_workspace)
        return cuda::matmul_sgd_momentum_streamk(x.data, y.data, c.in[2].data, c.in[3].data, g.rows, y.shape.last(),
                                                 x.shape.last(), c.attrs->lr, c.attrs->momentum, ctx.update_workspace,
                                                 ctx.update_workspace_bytes, 0, s);
      return cuda::matmul_sgd_momentum(x.data, y.data, c.in[2].data, c.in[3].data, g.rows, y.shape.last(), x.shape.last(),
                                       c.attrs->lr, c.attrs->momentum, s);
    case OpKind::layernorm_grad_params: return cuda::layernorm_params_op(c, g, ctx);
    case OpKind::fused_elementwise: return cuda::fused_elementwise(c, s);
    case OpKind::sgd_multi:
    case OpKind::sgd_momentum_multi:
    case OpKind::sgd_multi_cast:
    case OpKind::sgd_momentum_multi_cast: return cuda::multi_update(c, s);
    case OpKind::adamw:
    case OpKind::adamw_multi:
    case OpKind::adamw_multi_cast: return cuda::adamw(c, s);
    case OpKind::global_norm: return cuda::global_norm(c, ctx.scratch, ctx.scratch_bytes, s);
    case OpKind::clip_by_norm: return cuda::clip_by_norm(x.data, y.data, c.attrs->max_norm, out, n, s);
    // A group of one (no communicator joined: CudaBackend::run routes the others to it).
    case OpKind::all_reduce: return x.data == out ? void() : cuda::copy(x.data, out, n, s, dt);
  }
  throw std::invalid_argument(std::string("run_cuda ") + op_name(c.op) + ": op has no CUDA kernel");
}

}  // namespace tg::kernels
