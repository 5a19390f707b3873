#include "graph/optimizers.h"

#include <algorithm>
#include <cstddef>
#include <stdexcept>

namespace tg {

namespace {
// The gradients one global_norm of the tree takes: its own constant, not kMaxOpInputs, since
// the tree fixes the norm's rounding, which must not move with the op table's input counts.
constexpr size_t kNormGroup = 5;
static_assert(kNormGroup <= static_cast<size_t>(kMaxOpInputs), "the dynamic executor applies each global_norm");
}  // namespace

std::vector<Value> clip_grad_norm(Builder& b, const std::vector<Value>& grads, const std::vector<std::string>& names,
                                  float max_norm) {
  if (grads.size() != names.size())
    throw std::invalid_argument("clip_grad_norm: give one name per gradient");
  if (grads.empty()) return {};
  std::vector<Value> level = grads;
  do {
    std::vector<Value> norms;
    for (size_t i = 0; i < level.size(); i += kNormGroup) {
      const size_t end = std::min(level.size(), i + kNormGroup);
      norms.push_back(b.apply(OpKind::global_norm, std::vector<Value>(level.begin() + static_cast<std::ptrdiff_t>(i),
                                                                      level.begin() + static_cast<std::ptrdiff_t>(end)),
                              {}, "grad_norm"));
    }
    level = std::move(norms);
  } while (level.size() > 1);
  Attrs at;
  at.max_norm = max_norm;
  std::vector<Value> out;
  out.reserve(grads.size());
  for (size_t i = 0; i < grads.size(); ++i)
    out.push_back(b.apply(OpKind::clip_by_norm, {grads[i], level[0]}, at, names[i] + ".clip"));
  return out;
}

void adamw_update(Builder& b, const Value& param, const Value& grad, const std::string& name, float lr,
                  const AdamAttr& adam, const std::string& node_name, const Value& found) {
  Attrs at;
  at.lr = lr;
  at.adam = adam;
  const Value m = b.optimizer_state(param, name + ".exp_avg");
  const Value v = b.optimizer_state(param, name + ".exp_avg_sq");
  const Value step = optimizer_state_of_shape(b, Shape{1}, name + ".step");
  std::vector<Value> in = {param, grad, m, v, step};
  if (found.valid()) in.push_back(found);
  b.apply(OpKind::adamw, in, at, node_name);
}

}  // namespace tg
