#include "experiments/memory/precision_roles.h"

#include "experiments/memory/measure.h"
#include "static/passes/pass.h"

namespace tg::memory {

const char* prec_role_name(PrecRole r) {
  switch (r) {
    case PrecRole::parameters: return "parameters";
    case PrecRole::weight_copies: return "weight_copies";
    case PrecRole::gradients: return "gradients";
    case PrecRole::momentum: return "momentum";
    case PrecRole::activations: return "activations";
    case PrecRole::workspace: return "workspace";
    case PrecRole::inputs: return "inputs";
  }
  return "?";
}

int64_t DtypeRoleBytes::role(PrecRole r) const {
  int64_t t = 0;
  for (int64_t b : bytes[static_cast<size_t>(r)]) t += b;
  return t;
}

int64_t DtypeRoleBytes::total() const {
  int64_t t = 0;
  for (int r = 0; r < kNumPrecRoles; ++r) t += role(static_cast<PrecRole>(r));
  return t;
}

PrecRole prec_role_of(const Graph& g, int v) {
  const ValueInfo& vi = g.values[static_cast<size_t>(v)];
  if (vi.producer >= 0) {
    const Node& n = g.nodes[static_cast<size_t>(vi.producer)];
    if (n.op == OpKind::cast && g.values[static_cast<size_t>(n.inputs[0])].role == Role::parameter)
      return PrecRole::weight_copies;
  }
  // The low_copies pass's persistent copies: optimizer state that the updates write.
  if (vi.role == Role::optimizer_state && vi.dtype != DType::F32 && is_weight_copy(g, v)) return PrecRole::weight_copies;
  switch (mem_role_of(vi.role)) {
    case MemRole::parameters: return PrecRole::parameters;
    case MemRole::gradients: return PrecRole::gradients;
    case MemRole::momentum: return PrecRole::momentum;
    case MemRole::activations: return PrecRole::activations;
    case MemRole::inputs: return PrecRole::inputs;
    case MemRole::workspace: break;
  }
  return PrecRole::workspace;
}

DtypeRoleBytes plan_dtype_role_bytes(const Graph& g, const MemoryPlan& p) {
  DtypeRoleBytes r;
  for (size_t v = 0; v < g.values.size(); ++v) {
    if (p.storage[v] != static_cast<int>(v) || p.placement[v] == Placement::unused) continue;
    const ValueInfo& vi = g.values[v];
    r.at(prec_role_of(g, static_cast<int>(v)), vi.dtype) += vi.bytes();
  }
  return r;
}

}  // namespace tg::memory
