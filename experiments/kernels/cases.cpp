#include "experiments/kernels/cases.h"

#include <algorithm>
#include <utility>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/dtype_support.h"

namespace tg::bench {

namespace {
constexpr int64_t kCols = 1024;
}

std::vector<std::string> case_names() {
  return {"fill", "copy", "scale", "relu", "gelu", "add", "mul", "relu_grad", "gelu_grad", "bias_add",
          "fused_elementwise", "sgd", "sgd_momentum", "sgd_momentum_multi", "softmax", "softmax_grad", "layernorm",
          "layernorm_grad_x", "layernorm_grad_gamma", "layernorm_grad_gamma_beta", "cross_entropy_grad",
          "reduce_sum_rows", "reduce_sum_cols", "broadcast", "transpose", "transpose_heads", "mse_loss", "cast",
          "batch_norm", "batch_norm_nhwc", "batch_norm_grad", "batch_norm_grad_nhwc"};
}

float* CaseSet::buffer(int64_t n, float value, DType dt) {
  buffers_.push_back(cuda::DeviceBuffer::allocate(static_cast<size_t>(n * dtype_size(dt))));
  float* p = buffers_.back().as<float>();
  if (dt == DType::F32) {
    kernels::cuda::fill(p, value, n, nullptr);
    return p;
  }
  // fill writes f32 only (its dtype rule): the value in f32, cast once (every value used here is
  // exact in bf16 and f16).
  staging_.push_back(cuda::DeviceBuffer::allocate(static_cast<size_t>(n) * sizeof(float)));
  float* f32 = staging_.back().as<float>();
  kernels::cuda::fill(f32, value, n, nullptr);
  kernels::cuda::cast({f32, Shape{n}}, {p, Shape{n}, dt}, nullptr);
  return p;
}

CaseSet::CaseSet(int64_t bytes, const std::vector<std::string>& only, DType dtype) : dtype_(dtype) {
  const int64_t f = dtype_size(dtype);  // bytes per element
  const int64_t n = std::max<int64_t>(kCols, bytes / f / kCols * kCols);  // whole rows
  const int64_t rows = n / kCols;
  const Shape v{n}, m{rows, kCols}, row{kCols}, col{rows}, one{1};
  auto want = [&](const char* name) { return only.empty() || std::find(only.begin(), only.end(), name) != only.end(); };
  auto add = [&](const char* name, OpKind op, std::vector<std::pair<Shape, float>> ins, Shape out, int64_t moved,
                 Attrs at = {}) {
    if (!want(name)) return;
    if (!kernels::cuda::has_kernel(op, dtype_)) {
      without_kernel_.push_back(name);
      return;
    }
    attrs_.push_back(std::make_unique<Attrs>(at));
    KernelCase k;
    k.op = name;
    k.call.op = op;
    k.call.attrs = attrs_.back().get();
    k.call.num_inputs = static_cast<int>(ins.size());
    k.dtype = dtype_;
    more_.push_back(std::make_unique<std::vector<kernels::TensorView>>());
    for (size_t i = 0; i < ins.size(); ++i) {
      const kernels::TensorView t{buffer(ins[i].first.numel(), ins[i].second, dtype_), ins[i].first, dtype_};
      if (i < k.call.in.size()) k.call.in[i] = t;
      else more_.back()->push_back(t);
    }
    k.call.more = more_.back()->empty() ? nullptr : more_.back()->data();
    if (!op_is_update(op)) k.call.out = {buffer(out.numel(), 0.0f, dtype_), out, dtype_};
    k.bytes_moved = moved;
    cases_.push_back(k);
  };
  const float x = 0.25f;
  Attrs fill_at;
  fill_at.value = 1.0f;
  fill_at.shape = v;
  add("fill", OpKind::fill, {}, v, n * f, fill_at);
  add("copy", OpKind::copy, {{v, x}}, v, 2 * n * f);
  add("scale", OpKind::scale, {{v, x}}, v, 2 * n * f);
  add("relu", OpKind::relu, {{v, x}}, v, 2 * n * f);
  add("gelu", OpKind::gelu, {{v, x}}, v, 2 * n * f);
  add("add", OpKind::add, {{v, x}, {v, x}}, v, 3 * n * f);
  add("mul", OpKind::mul, {{v, x}, {v, x}}, v, 3 * n * f);
  add("relu_grad", OpKind::relu_grad, {{v, x}, {v, x}}, v, 3 * n * f);
  add("gelu_grad", OpKind::gelu_grad, {{v, x}, {v, x}}, v, 3 * n * f);
  add("bias_add", OpKind::bias_add, {{m, x}, {row, x}}, m, 2 * n * f);
  // mul(x, y) + b, relu, * 0.5 in one kernel: x, y and the bias row read once, the result written once.
  Attrs chain;
  chain.program.code = {{EwOp::mul, 0, 1}, {EwOp::add, 3, 2}, {EwOp::relu, 4}, {EwOp::scale, 5, 0, 0.5f}};
  add("fused_elementwise", OpKind::fused_elementwise, {{m, x}, {m, x}, {row, x}}, m, 3 * n * f + kCols * f, chain);
  add("sgd", OpKind::sgd, {{v, x}, {v, x}}, {}, 3 * n * f);
  add("sgd_momentum", OpKind::sgd_momentum, {{v, x}, {v, x}, {v, x}}, {}, 5 * n * f);
  // The same elements as 16 tensors (whole rows each), updated in one launch.
  std::vector<std::pair<Shape, float>> groups;
  const int64_t tensors = 16;
  const Shape part{std::max<int64_t>(1, rows / tensors) * kCols};
  for (int64_t t = 0; t < tensors; ++t)
    for (int k = 0; k < 3; ++k) groups.push_back({part, x});
  add("sgd_momentum_multi", OpKind::sgd_momentum_multi, groups, {}, 5 * tensors * part.numel() * f);
  add("softmax", OpKind::softmax, {{m, x}}, m, 2 * n * f);
  add("softmax_grad", OpKind::softmax_grad, {{m, x}, {m, x}}, m, 3 * n * f);
  add("layernorm", OpKind::layernorm, {{m, x}, {row, 1.0f}, {row, 0.0f}}, m, 2 * n * f);
  add("layernorm_grad_x", OpKind::layernorm_grad_x, {{m, x}, {m, x}, {row, 1.0f}}, m, 3 * n * f);
  add("layernorm_grad_gamma", OpKind::layernorm_grad_gamma, {{m, x}, {m, x}}, row, 2 * n * f);
  if (want("layernorm_grad_gamma_beta") && dtype_ != DType::F32) {
    without_kernel_.push_back("layernorm_grad_gamma_beta");  // its launcher takes f32 only
  } else if (want("layernorm_grad_gamma_beta")) {
    // dgamma and dbeta in one pass over dy and x: the same bytes as layernorm_grad_gamma.
    KernelCase k;
    k.op = "layernorm_grad_gamma_beta";
    const float* dy = buffer(n, x, dtype_);
    const float* xs = buffer(n, x, dtype_);
    float* dg = buffer(kCols, 0.0f, dtype_);
    float* db = buffer(kCols, 0.0f, dtype_);
    k.bytes_moved = 2 * n * f;
    k.launch = [=](const kernels::CudaExecContext& ctx) {
      kernels::cuda::layernorm_grad_gamma_beta(dy, xs, dg, db, rows, kCols, 1e-5f, ctx.scratch, ctx.scratch_bytes,
                                               ctx.stream);
    };
    cases_.push_back(k);
  }
  Attrs ce;
  add("cross_entropy_grad", OpKind::cross_entropy_grad, {{m, x}, {col, 3.0f}, {one, 1.0f}}, m, 2 * n * f, ce);
  Attrs r1;
  r1.axis = 1;
  add("reduce_sum_rows", OpKind::reduce_sum, {{m, x}}, col, n * f, r1);
  Attrs r0;
  r0.axis = 0;
  add("reduce_sum_cols", OpKind::reduce_sum, {{m, x}}, row, n * f, r0);
  Attrs bc;
  bc.axis = 0;
  bc.size = rows;
  add("broadcast", OpKind::broadcast, {{row, x}}, m, n * f, bc);
  Attrs tr;
  tr.perm = {{1, 0, 2, 3}};
  add("transpose", OpKind::transpose, {{m, x}}, Shape{kCols, rows}, 2 * n * f, tr);
  // The transformer's head split: [B, S, H, dh] -> [B, H, S, dh] with H = 8, dh = 64.
  const int64_t head_rows = n / 512, seq = std::min<int64_t>(256, head_rows), batch = head_rows / seq;
  Attrs th;
  th.perm = {{0, 2, 1, 3}};
  add("transpose_heads", OpKind::transpose, {{Shape{batch, seq, 8, 64}, x}}, Shape{batch, 8, seq, 64},
      2 * batch * seq * 512 * f, th);
  add("mse_loss", OpKind::mse_loss, {{v, x}, {v, x}}, one, 2 * n * f);
  // Batch norm on a ResNet's first stage, [N, 64, 56, 56] (NCHW) or [N, 56, 56, 64] (NHWC), the
  // bytes its two passes move: the forward reads x for the statistics, then reads x and writes
  // y; the gradient reads dy and x for its sums, then reads them again and writes dx. gamma,
  // beta and the sums in f32 beside 16-bit activations, as autocast runs them.
  const int64_t bn_c = 64, bn_hw = 56, bn_n = std::max<int64_t>(1, n / (bn_c * bn_hw * bn_hw));
  const int64_t bn_count = bn_n * bn_c * bn_hw * bn_hw;
  for (bool nhwc : {false, true}) {
    const Shape xs = nhwc ? Shape{bn_n, bn_hw, bn_hw, bn_c} : Shape{bn_n, bn_c, bn_hw, bn_hw}, ch{bn_c};
    Attrs at;
    at.channels_last = nhwc;
    for (bool grad : {false, true}) {
      const std::string name = std::string(grad ? "batch_norm_grad" : "batch_norm") + (nhwc ? "_nhwc" : "");
      if (!want(name.c_str())) continue;
      attrs_.push_back(std::make_unique<Attrs>(at));
      KernelCase k;
      k.op = name;
      k.dtype = dtype_;
      k.call.op = grad ? OpKind::batch_norm_grad : OpKind::batch_norm;
      k.call.attrs = attrs_.back().get();
      k.call.num_inputs = 3;
      k.call.in[0] = {buffer(bn_count, x, dtype_), xs, dtype_};
      k.call.in[1] = grad ? kernels::TensorView{buffer(bn_count, x, dtype_), xs, dtype_}
                          : kernels::TensorView{buffer(bn_c, 1.0f, DType::F32), ch, DType::F32};
      k.call.in[2] = {buffer(bn_c, grad ? 1.0f : 0.0f, DType::F32), ch, DType::F32};
      k.call.out = {buffer(bn_count, 0.0f, dtype_), xs, dtype_};
      if (grad) k.call.out2 = {buffer(2 * bn_c, 0.0f, DType::F32), Shape{2, bn_c}, DType::F32};
      k.bytes_moved = (grad ? 5 : 3) * bn_count * f;
      cases_.push_back(k);
    }
  }
  if (want("cast") && dtype_ != DType::F32) {
    // f32 to this set's dtype and back, each reading `bytes` of input.
    for (const auto& [from, to] : {std::pair{DType::F32, dtype_}, std::pair{dtype_, DType::F32}}) {
      const int64_t cn = std::max<int64_t>(kCols, bytes / dtype_size(from) / kCols * kCols);
      Attrs at;
      at.to = to;
      attrs_.push_back(std::make_unique<Attrs>(at));
      KernelCase k;
      k.op = "cast";
      k.dtype = from;
      k.to = to;
      k.call.op = OpKind::cast;
      k.call.attrs = attrs_.back().get();
      k.call.num_inputs = 1;
      k.call.in[0] = {buffer(cn, x, from), Shape{cn}, from};
      k.call.out = {buffer(cn, 0.0f, to), Shape{cn}, to};
      k.bytes_moved = cn * (dtype_size(from) + dtype_size(to));
      cases_.push_back(k);
    }
  }
  // Every buffer holds its values before a case is timed on another stream; the f32 staging of
  // the 16-bit values is then no longer needed.
  TG_CUDA_CHECK(cudaDeviceSynchronize());
  staging_.clear();
}

}  // namespace tg::bench
