// In-place parameter updates, plain float arithmetic as written in cpu_kernels.h.
#include <vector>

#include "graph/float_formats.h"

#include "kernels/cpu/cpu_kernels.h"

namespace tg::kernels {

void cpu_sgd(float* p, const float* g, float lr, int64_t n) {
  for (int64_t i = 0; i < n; ++i) p[i] = p[i] - lr * g[i];
}

void cpu_sgd_momentum(float* p, const float* g, float* v, float lr, float momentum, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float vi = momentum * v[i] + g[i];
    v[i] = vi;
    p[i] = p[i] - lr * vi;
  }
}

void cpu_matmul_sgd_momentum(const OpCall& c) {
  const TensorView& p = c.in[0];
  const TensorView& a = c.in[1];
  const TensorView& dz = c.in[3];
  std::vector<float> grad(static_cast<size_t>(p.shape.numel()));
  // The product as matmul_bias_grad's reference computes it, then the update.
  cpu_matmul(true, false, a.data, a.shape.dims.data(), a.shape.rank, dz.data, dz.shape.dims.data(), dz.shape.rank,
             grad.data());
  cpu_sgd_momentum(p.data, grad.data(), c.in[2].data, c.attrs->lr, c.attrs->momentum, p.shape.numel());
}

const float* cpu_update_grad(const TensorView& g, std::vector<float>& wide) {
  if (g.dtype == DType::F32) return g.data;
  wide.resize(static_cast<size_t>(g.shape.numel()));
  load_from_dtype(g.data, wide.size(), g.dtype, wide.data());
  return wide.data();
}

void cpu_store_weight_copy(const OpCall& c, int group) {
  const TensorView& p = c.input(group);
  const TensorView& low = c.input(group + op_num_inputs(c.op) - 1);
  store_as_dtype(p.data, static_cast<size_t>(p.shape.numel()), low.dtype, low.data);
}

void cpu_multi_update(const OpCall& c) {
  const Attrs& at = *c.attrs;
  const int group = op_num_inputs(c.op);
  const int groups_end = op_group_inputs(c.op, c.num_inputs);
  if (groups_end < c.num_inputs && c.input(groups_end).data[0] != 0.0f) return;  // loss scaling skips this step
  std::vector<float> wide;
  for (int i = 0; i < groups_end; i += group) {
    float* p = c.input(i).data;
    const float* g = cpu_update_grad(c.input(i + 1), wide);
    const int64_t n = c.input(i).shape.numel();
    if (op_update_has_velocity(c.op)) cpu_sgd_momentum(p, g, c.input(i + 2).data, at.lr, at.momentum, n);
    else cpu_sgd(p, g, at.lr, n);
    if (op_update_writes_copy(c.op)) cpu_store_weight_copy(c, i);
  }
}

}  // namespace tg::kernels
