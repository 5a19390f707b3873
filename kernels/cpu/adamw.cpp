// adamw and adamw_multi, in place: the formula of kernels/optimizer_math.h in plain float math.
#include <cmath>
#include <vector>

#include "kernels/optimizer_math.h"
#include "kernels/cpu/cpu_kernels.h"

namespace tg::kernels {

void cpu_adamw(float* p, const float* g, float* m, float* v, float* step, const Attrs& at, int64_t n) {
  const AdamAttr& a = at.adam;
  const AdamWScalars s = adamw_scalars(at.lr, a.beta1, a.beta2, a.eps, a.weight_decay, *step);
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i];
    const float mi = s.beta1 * m[i] + s.one_minus_beta1 * gi;
    const float vi = s.beta2 * v[i] + (s.one_minus_beta2 * gi) * gi;
    const float denom = std::sqrt(vi) / s.bc2_sqrt + s.eps;
    m[i] = mi;
    v[i] = vi;
    p[i] = p[i] * s.decay - s.step_size * (mi / denom);
  }
  *step = *step + 1.0f;
}

void cpu_adamw_multi(const OpCall& c) {
  const int groups_end = op_group_inputs(c.op, c.num_inputs);
  if (groups_end < c.num_inputs && c.input(groups_end).data[0] != 0.0f) return;  // loss scaling skips this step
  const int group = op_num_inputs(c.op);  // 5, or 6 with the low-precision copy last
  std::vector<float> wide;
  for (int i = 0; i < groups_end; i += group) {
    cpu_adamw(c.input(i).data, cpu_update_grad(c.input(i + 1), wide), c.input(i + 2).data, c.input(i + 3).data,
              c.input(i + 4).data, *c.attrs, c.input(i).shape.numel());
    if (op_update_writes_copy(c.op)) cpu_store_weight_copy(c, i);
  }
}

}  // namespace tg::kernels
