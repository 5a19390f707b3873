#pragma once
// Which ops the CUDA backend runs on 16-bit tensors. Every op runs f32, and cast runs
// between any two dtypes; an op listed here also has a kernel for bf16 and f16 inputs (in
// the combinations its dtype rule allows, graph/dtype_rules.h). The executors ask before they
// run anything (Backend::runs), so a graph that needs a kernel the backend lacks is refused
// with the node's name instead of failing halfway through a step.
#include "graph/op.h"
#include "graph/shape.h"

namespace tg::kernels::cuda {

bool has_kernel(OpKind op, DType dt);

}  // namespace tg::kernels::cuda
