// The entry layer of the CUDA backend: the same cheap integer checks as run_cpu
// (kernels/cpu/dispatch.cpp), then one launcher per op on ctx.stream.
#include <fmt/format.h>

#include <stdexcept>

#include "kernels/cuda/cuda_kernels.h"

namespace tg::kernels {

namespace {

template <typename... Args>
[[noreturn]] void bad_call(const OpCall& c, fmt::format_string<Args...> f, Args&&... args) {
  throw std::invalid_argument(fmt::format("run_cuda {}: ", op_name(c.op)) +
                              fmt::format(f, std::forward<Args>(args)...));
}

const Attrs& attrs_of(const OpCall& c) {
  if (!c.attrs) bad_call(c, "attrs is null; point OpCall::attrs at the node's Attrs");
  return *c.attrs;
}

void check_numel(const OpCall& c, const char* what, const Shape& s, int64_t expect) {
  if (s.numel() != expect)
    bad_call(c, "{} has shape {} ({} elements) but the op needs {} elements", what, s.str(), s.numel(), expect);
}

void check_no_alias(const OpCall& c) {
  for (int i = 0; i < c.num_inputs; ++i)
    if (c.in[static_cast<size_t>(i)].data == c.out.data)
      bad_call(c, "output aliases input {}; this op cannot run in place, give it its own buffer", i);
}

int normalize_axis(const OpCall& c, int axis, int rank) {
  const int a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) bad_call(c, "axis {} is out of range for rank {}", axis, rank);
  return a;
}

int64_t prod(const Shape& s, int from, int to) {
  int64_t p = 1;
  for (int d = from; d < to; ++d) p *= s[d];
  return p;
}

void run_matmul(const OpCall& c, const CudaExecContext& ctx) {
  const Attrs& at = attrs_of(c);
  const Shape& a = c.in[0].shape;
  const Shape& b = c.in[1].shape;
  if (a.rank < 2 || (b.rank != 2 && b.rank != 3) || (b.rank == 3 && (a.rank != 3 || a[0] != b[0])))
    bad_call(c, "cannot multiply {} by {}; A must be rank >= 2 and B [k,n], or both [batch,.,.]", a.str(), b.str());
  const int64_t ka = at.trans_a ? a[a.rank - 2] : a[a.rank - 1];
  const int64_t kb = at.trans_b ? b[b.rank - 1] : b[b.rank - 2];
  if (ka != kb) bad_call(c, "inner dims of {} and {} differ: {} != {}", a.str(), b.str(), ka, kb);
  const int64_t m = at.trans_a ? a[a.rank - 1] : a[a.rank - 2];
  const int64_t n = at.trans_b ? b[b.rank - 2] : b[b.rank - 1];
  check_numel(c, "output", c.out.shape, prod(a, 0, a.rank - 2) * m * n);
  check_no_alias(c);
  cuda::matmul(ctx.cublas, ctx.stream, ctx.tf32, at.trans_a, at.trans_b, c.in[0].data, a.dims.data(), a.rank,
               c.in[1].data, b.dims.data(), b.rank, c.out.data);
}

void run_reduce(const OpCall& c, cudaStream_t s) {
  const Shape& x = c.in[0].shape;
  const int axis = normalize_axis(c, attrs_of(c).axis, x.rank);
  const int64_t outer = prod(x, 0, axis), len = x[axis], inner = prod(x, axis + 1, x.rank);
  check_numel(c, "output", c.out.shape, outer * inner);
  check_no_alias(c);
  if (c.op == OpKind::reduce_sum)
    cuda::reduce_sum(c.in[0].data, c.out.data, outer, len, inner, s);
  else
    cuda::reduce_mean(c.in[0].data, c.out.data, outer, len, inner, s);
}

void run_broadcast(const OpCall& c, cudaStream_t s) {
  const Attrs& at = attrs_of(c);
  const Shape& x = c.in[0].shape;
  const int axis = normalize_axis(c, at.axis, x.rank + 1);
  if (at.size < 1) bad_call(c, "size = {} must be >= 1", at.size);
  check_numel(c, "output", c.out.shape, x.numel() * at.size);
  check_no_alias(c);
  cuda::broadcast(c.in[0].data, c.out.data, prod(x, 0, axis), at.size, prod(x, axis, x.rank), s);
}

void run_transpose(const OpCall& c, cudaStream_t s) {
  const Attrs& at = attrs_of(c);
  const Shape& x = c.in[0].shape;
  bool seen[kMaxRank] = {false, false, false, false};
  for (int d = 0; d < x.rank; ++d) {
    const int p = at.perm[static_cast<size_t>(d)];
    if (p < 0 || p >= x.rank || seen[p]) bad_call(c, "perm is not a permutation of 0..{}", x.rank - 1);
    seen[p] = true;
  }
  check_numel(c, "output", c.out.shape, x.numel());
  check_no_alias(c);
  cuda::transpose(c.in[0].data, x.dims.data(), x.rank, at.perm.data(), c.out.data, s);
}

void run_cross_entropy(const OpCall& c, cudaStream_t s) {
  const Shape& x = c.in[0].shape;
  if (x.rank != 2) bad_call(c, "logits {} must be [n, classes]", x.str());
  check_numel(c, "labels", c.in[1].shape, x[0]);
  if (c.op == OpKind::cross_entropy) {
    check_numel(c, "output", c.out.shape, 1);
    check_no_alias(c);
    return cuda::cross_entropy(c.in[0].data, c.in[1].data, c.out.data, x[0], x[1], s);
  }
  check_numel(c, "dloss", c.in[2].shape, 1);
  check_numel(c, "output", c.out.shape, x.numel());
  if (c.out.data == c.in[1].data) bad_call(c, "output aliases the labels; give it its own buffer");
  if (c.out.data == c.in[2].data) bad_call(c, "output aliases dloss; give it its own buffer");
  cuda::cross_entropy_grad(c.in[0].data, c.in[1].data, c.in[2].data, c.out.data, x[0], x[1], s);
}

}  // namespace

void run_cuda(const OpCall& c, const CudaExecContext& ctx) {
  const int arity = op_num_inputs(c.op);
  if (c.num_inputs != arity) bad_call(c, "takes {} inputs, the call has {}", arity, c.num_inputs);
  for (int i = 0; i < arity; ++i)
    if (!c.in[static_cast<size_t>(i)].data) bad_call(c, "input {} has no data (null pointer)", i);
  if (!op_is_update(c.op) && !c.out.data) bad_call(c, "output has no data (null pointer)");

  const cudaStream_t s = ctx.stream;
  const TensorView& x = c.in[0];
  const TensorView& y = c.in[1];
  float* out = c.out.data;
  const int64_t n = x.shape.numel();
  switch (c.op) {
    case OpKind::matmul: return run_matmul(c, ctx);
    case OpKind::add:
    case OpKind::sub:
    case OpKind::mul:
    case OpKind::relu_grad:
    case OpKind::gelu_grad:
    case OpKind::softmax_grad:
      check_numel(c, "input 1", y.shape, n);
      check_numel(c, "output", c.out.shape, n);
      switch (c.op) {
        case OpKind::add: return cuda::add(x.data, y.data, out, n, s);
        case OpKind::sub: return cuda::sub(x.data, y.data, out, n, s);
        case OpKind::mul: return cuda::mul(x.data, y.data, out, n, s);
        case OpKind::relu_grad: return cuda::relu_grad(x.data, y.data, out, n, s);
        case OpKind::gelu_grad: return cuda::gelu_grad(x.data, y.data, out, n, s);
        default: return cuda::softmax_grad_rows(x.data, y.data, out, x.shape.rows(), x.shape.last(), s);
      }
    case OpKind::scale:
    case OpKind::relu:
    case OpKind::gelu:
    case OpKind::softmax:
    case OpKind::copy:
    case OpKind::reshape:
      check_numel(c, "output", c.out.shape, n);
      switch (c.op) {
        case OpKind::scale: return cuda::scale(x.data, attrs_of(c).alpha, out, n, s);
        case OpKind::relu: return cuda::relu(x.data, out, n, s);
        case OpKind::gelu: return cuda::gelu(x.data, out, n, s);
        case OpKind::softmax: return cuda::softmax_rows(x.data, out, x.shape.rows(), x.shape.last(), s);
        default: return cuda::copy(x.data, out, n, s);  // copy, and reshape given its own memory
      }
    case OpKind::bias_add:
      check_numel(c, "bias", y.shape, x.shape.last());
      check_numel(c, "output", c.out.shape, n);
      return cuda::bias_add(x.data, y.data, out, x.shape.rows(), x.shape.last(), s);
    case OpKind::layernorm:
      check_numel(c, "gamma", y.shape, x.shape.last());
      check_numel(c, "beta", c.in[2].shape, x.shape.last());
      check_numel(c, "output", c.out.shape, n);
      return cuda::layernorm_rows(x.data, y.data, c.in[2].data, out, x.shape.rows(), x.shape.last(),
                                  attrs_of(c).eps, s);
    case OpKind::layernorm_grad_x:
      check_numel(c, "x", y.shape, n);
      check_numel(c, "gamma", c.in[2].shape, y.shape.last());
      check_numel(c, "output", c.out.shape, n);
      return cuda::layernorm_grad_x_rows(x.data, y.data, c.in[2].data, out, y.shape.rows(), y.shape.last(),
                                         attrs_of(c).eps, s);
    case OpKind::layernorm_grad_gamma:
      check_numel(c, "x", y.shape, n);
      check_numel(c, "output", c.out.shape, y.shape.last());
      check_no_alias(c);
      return cuda::layernorm_grad_gamma(x.data, y.data, out, y.shape.rows(), y.shape.last(), attrs_of(c).eps,
                                        ctx.scratch, ctx.scratch_bytes, s);
    case OpKind::reduce_sum:
    case OpKind::reduce_mean: return run_reduce(c, s);
    case OpKind::broadcast: return run_broadcast(c, s);
    case OpKind::transpose: return run_transpose(c, s);
    case OpKind::mse_loss:
      check_numel(c, "target", y.shape, n);
      check_numel(c, "output", c.out.shape, 1);
      check_no_alias(c);
      return cuda::mse_loss(x.data, y.data, out, n, ctx.scratch, ctx.scratch_bytes, s);
    case OpKind::mse_loss_grad:
      check_numel(c, "target", y.shape, n);
      check_numel(c, "dloss", c.in[2].shape, 1);
      check_numel(c, "output", c.out.shape, n);
      if (out == c.in[2].data) bad_call(c, "output aliases dloss; give it its own buffer");
      return cuda::mse_loss_grad(x.data, y.data, c.in[2].data, out, n, s);
    case OpKind::cross_entropy:
    case OpKind::cross_entropy_grad: return run_cross_entropy(c, s);
    case OpKind::fill: return cuda::fill(out, attrs_of(c).value, c.out.shape.numel(), s);
    case OpKind::sgd:
      check_numel(c, "grad", y.shape, n);
      return cuda::sgd(x.data, y.data, attrs_of(c).lr, n, s);
    case OpKind::sgd_momentum:
      check_numel(c, "grad", y.shape, n);
      check_numel(c, "velocity", c.in[2].shape, n);
      return cuda::sgd_momentum(x.data, y.data, c.in[2].data, attrs_of(c).lr, attrs_of(c).momentum, n, s);
  }
  bad_call(c, "op has no CUDA kernel");
}

}  // namespace tg::kernels
