// Plain float elementwise ops. Each loop reads element i before it writes
// element i, so out may be exactly one of the inputs (in-place execution).
// fused_elementwise reads and writes every float dtype itself (its values have several).
#include <algorithm>
#include <cstring>
#include <vector>

#include "graph/broadcast.h"
#include "graph/float_formats.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/indices.h"

namespace tg::kernels {

void cpu_add(const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

void cpu_sub(const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] - b[i];
}

void cpu_mul(const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] * b[i];
}

void cpu_scale(const float* x, float alpha, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = alpha * x[i];
}

void cpu_fill(float* y, float value, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = value;
}

void cpu_copy(const float* x, float* y, int64_t n) {
  if (x != y && n > 0) std::memmove(y, x, static_cast<size_t>(n) * sizeof(float));
}

namespace {

// Element `at` of a view of any float dtype, as a pointer to its bytes.
const void* element_at(const TensorView& t, int64_t at) {
  return static_cast<const char*>(static_cast<const void*>(t.data)) + at * dtype_size(t.dtype);
}

}  // namespace

// Tile by tile, so that the chain's values between ops stay in a small buffer in cache;
// each instruction is the unfused op's own f32 kernel on the tile, and rounds its result
// to its dtype (graph/ew_program.h) as the 16-bit call of that op stores it
// (kernels/cpu/widen.cpp): a cast is only that rounding. Inputs of bf16 and f16 are
// widened into the tile (exact). The last instruction writes the output, which may be an
// input of the same elements and dtype: every kernel reads element i before it writes it,
// and a 16-bit input was widened before anything is written.
void cpu_fused_elementwise(const OpCall& c) {
  constexpr int64_t kTile = 1024;
  const EwProgram& prog = c.attrs->program;
  const int nin = c.num_inputs;
  const int64_t n = c.out.shape.numel(), cols = c.out.shape.last();
  std::vector<DType> in_dtypes(static_cast<size_t>(nin)), dtypes;
  for (int j = 0; j < nin; ++j) in_dtypes[static_cast<size_t>(j)] = c.input(j).dtype;
  ew_program_dtypes(prog, in_dtypes, &dtypes);  // valid: check_op_call asked
  const bool out_f32 = c.out.dtype == DType::F32;
  float wide[kMaxEwInputs][kTile];  // the [cols] and the 16-bit inputs, in f32
  float acc[kTile];                 // the result of the instruction before
  const float* operand[kMaxEwInputs + kMaxEwInstrs] = {};
  for (int64_t base = 0; base < n; base += kTile) {
    const int64_t len = std::min(kTile, n - base);
    for (int j = 0; j < nin; ++j) {
      const TensorView& t = c.input(j);
      float* w = wide[j];
      operand[j] = w;
      if (t.shape.numel() != n) {
        for (int64_t i = 0, col = base % cols; i < len; ++i, col = col + 1 == cols ? 0 : col + 1)
          load_from_dtype(element_at(t, col), 1, t.dtype, w + i);
      } else if (t.dtype == DType::F32) {
        operand[j] = t.data + base;
      } else {
        load_from_dtype(element_at(t, base), static_cast<size_t>(len), t.dtype, w);
      }
    }
    for (int k = 0; k < prog.size(); ++k) {
      const EwInstr& in = prog.code[static_cast<size_t>(k)];
      const bool last = k + 1 == prog.size();
      float* y = last && out_f32 ? c.out.data + base : acc;
      const float* a = operand[in.a];
      const float* b = ew_op_binary(in.op) ? operand[in.b] : nullptr;
      switch (in.op) {
        case EwOp::add: cpu_add(a, b, y, len); break;
        case EwOp::sub: cpu_sub(a, b, y, len); break;
        case EwOp::mul: cpu_mul(a, b, y, len); break;
        case EwOp::scale: cpu_scale(a, in.alpha, y, len); break;
        case EwOp::relu: cpu_relu(a, y, len); break;
        case EwOp::relu_grad: cpu_relu_grad(a, b, y, len); break;
        case EwOp::gelu: cpu_gelu(a, y, len); break;
        case EwOp::gelu_grad: cpu_gelu_grad(a, b, y, len); break;
        case EwOp::tanh: cpu_tanh(a, y, len); break;
        case EwOp::tanh_grad: cpu_tanh_grad(a, b, y, len); break;
        case EwOp::sigmoid: cpu_sigmoid(a, y, len); break;
        case EwOp::sigmoid_grad: cpu_sigmoid_grad(a, b, y, len); break;
        case EwOp::exp: cpu_exp(a, y, len); break;
        case EwOp::log: cpu_log(a, y, len); break;
        case EwOp::log_grad: cpu_log_grad(a, b, y, len); break;
        case EwOp::gelu_erf: cpu_gelu_erf(a, y, len); break;
        case EwOp::gelu_erf_grad: cpu_gelu_erf_grad(a, b, y, len); break;
        case EwOp::cast: cpu_copy(a, y, len); break;
      }
      const DType dt = dtypes[static_cast<size_t>(k)];
      if (last && !out_f32) {
        store_as_dtype(acc, static_cast<size_t>(len), dt, const_cast<void*>(element_at(c.out, base)));
      } else if (dt != DType::F32) {
        for (int64_t i = 0; i < len; ++i) y[i] = round_to_dtype(y[i], dt);
      }
      operand[nin + k] = y;
    }
  }
}

// Each output element reads the elements of cond, a and b its index broadcasts to
// (graph/broadcast.h); the output never shares their memory (the op table's alias column).
void cpu_where(const OpCall& c) {
  const Shape& out = c.out.shape;
  const auto sc = broadcast_strides(c.in[0].shape, out), sa = broadcast_strides(c.in[1].shape, out),
             sb = broadcast_strides(c.in[2].shape, out);
  const int64_t n = out.numel();
  for (int64_t e = 0; e < n; ++e) {
    int64_t rem = e, pc = 0, pa = 0, pb = 0;
    for (int d = out.rank - 1; d >= 0; --d) {
      const int64_t i = rem % out[d];
      rem /= out[d];
      pc += i * sc[static_cast<size_t>(d)];
      pa += i * sa[static_cast<size_t>(d)];
      pb += i * sb[static_cast<size_t>(d)];
    }
    c.out.data[e] = condition_at(c.in[0], pc) ? c.in[1].data[pa] : c.in[2].data[pb];
  }
}

}  // namespace tg::kernels
