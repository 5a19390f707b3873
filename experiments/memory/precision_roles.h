#pragma once
// tg-memory per precision (graph/precision.h): bytes by role *and* dtype. Autocast
// keeps the parameters, gradients and momentum in f32 and adds what an f32 graph does
// not have: a low-precision copy of each parameter a GEMM reads (its `cast` node, made
// once a step, or with the low_copies pass a persistent copy its update writes) and
// activations stored in the low type. So the roles here are
// tg-memory's with the weight copies taken out of whichever role the graph gives them
// (activation when backward reads the copy, workspace otherwise).
#include <array>
#include <cstdint>

#include "experiments/memory/formulas.h"
#include "graph/graph.h"
#include "graph/precision.h"
#include "static/planner.h"

namespace tg::memory {

enum class PrecRole : int { parameters, weight_copies, gradients, momentum, activations, workspace, inputs };
constexpr int kNumPrecRoles = 7;
constexpr int kNumDTypes = 5;  // DType's F32, BF16, F16, I32, I64 (ids and labels are inputs)
const char* prec_role_name(PrecRole r);

// Bytes by (role, dtype).
struct DtypeRoleBytes {
  std::array<std::array<int64_t, kNumDTypes>, kNumPrecRoles> bytes{};
  int64_t& at(PrecRole r, DType d) { return bytes[static_cast<size_t>(r)][static_cast<size_t>(d)]; }
  int64_t at(PrecRole r, DType d) const { return bytes[static_cast<size_t>(r)][static_cast<size_t>(d)]; }
  int64_t role(PrecRole r) const;  // all dtypes
  int64_t total() const;
};

// Value v's role here: a weight copy when a `cast` of a parameter produced it (a value of
// the step, in the arena) or when it is the persistent copy an update writes (the
// low_copies pass, static/passes/pass.h: optimizer state, in the parameter store), else
// its graph role as tg-memory's (mem_role_of).
PrecRole prec_role_of(const Graph& g, int v);

// The planner's bytes by (role, dtype): storage roots only, as plan_role_bytes.
DtypeRoleBytes plan_dtype_role_bytes(const Graph& g, const MemoryPlan& p);

// The closed formulas per precision (formulas_precision.cpp): `bytes` by (role, dtype),
// and `graph_roles`, the same bytes under tg-memory's six roles with each weight copy
// counted in the role the graph gives it, which is what the dynamic executor's
// per-role peaks can see. fp32 and tf32 give predict_mlp's / predict_transformer's
// bytes, all f32, no copies.
struct PrecisionPredicted {
  DtypeRoleBytes bytes;
  Predicted graph_roles;
};
PrecisionPredicted predict_mlp_precision(const MlpConfig& c, Precision p, bool training, bool momentum);
PrecisionPredicted predict_transformer_precision(const TransformerConfig& c, Precision p, bool training,
                                                 bool momentum);

}  // namespace tg::memory
