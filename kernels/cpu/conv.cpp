// conv2d, its backward ops and the pools: each output element alone, by its element function
// of graph/conv.h (double sums in a fixed order), so the CUDA kernels, which run the same
// functions, agree with this reference.
#include <stdexcept>
#include <string>

#include "graph/conv.h"
#include "kernels/cpu/cpu_kernels.h"

namespace tg::kernels {

namespace {
template <typename F>
void each(float* out, int64_t n, F element) {
  for (int64_t i = 0; i < n; ++i) out[i] = element(i);
}
}  // namespace

void cpu_conv_op(const OpCall& c, const ConvGeometry& g) {
  const float* a = c.in[0].data;
  const float* b = c.in[1].data;
  float* y = c.out.data;
  const int64_t n = c.out.shape.numel();
  switch (c.op) {
    case OpKind::conv2d: return each(y, n, [&](int64_t i) { return conv2d_element(a, b, g, i); });
    case OpKind::conv2d_grad_input:
    case OpKind::conv_transpose2d:  // x as dy (graph/conv.h: conv_transpose_geometry)
      return each(y, n, [&](int64_t i) { return conv2d_grad_input_element(a, b, g, i); });
    case OpKind::conv2d_grad_weight:
      return each(y, n, [&](int64_t i) { return conv2d_grad_weight_element(a, b, g, i); });
    case OpKind::conv2d_bias_act:
    case OpKind::conv2d_bias_add_act: {
      const float* residual = c.op == OpKind::conv2d_bias_add_act ? c.in[3].data : nullptr;
      const Act act = c.attrs->act;
      return each(y, n, [&](int64_t i) {
        return conv_epilogue_element(conv2d_element(a, b, g, i), c.in[2].data, residual, g, act, i);
      });
    }
    case OpKind::max_pool2d: return each(y, n, [&](int64_t i) { return max_pool2d_element(a, g, i); });
    case OpKind::avg_pool2d: return each(y, n, [&](int64_t i) { return avg_pool2d_element(a, g, i); });
    case OpKind::max_pool2d_grad: return each(y, n, [&](int64_t i) { return pool2d_grad_element(a, b, g, i); });
    case OpKind::avg_pool2d_grad: return each(y, n, [&](int64_t i) { return pool2d_grad_element(a, nullptr, g, i); });
    default: break;
  }
  throw std::invalid_argument(std::string("run_cpu ") + op_name(c.op) + ": not an op of the conv family");
}

}  // namespace tg::kernels
