#pragma once
#include <string>
#include <vector>

#include "graph/attrs.h"
#include "graph/op.h"
#include "graph/shape.h"

namespace tg {

// The output shape of `op` applied to `inputs`, or a GraphError whose message
// names the node, the op, the shapes and the offending dimension, and says how
// to fix it ("matmul n3: cannot multiply [32,512] by [256,10]: inner dims 512 != 256 ...").
// Update ops (no output) return an empty shape after checking their inputs.
Shape infer_shape(OpKind op, const std::vector<Shape>& inputs, const Attrs& attrs,
                  const std::string& node_name);
// Every output's shape: op_num_outputs(op) of them (the fused ops with a second result
// have two; updates none).
std::vector<Shape> infer_shapes(OpKind op, const std::vector<Shape>& inputs, const Attrs& attrs,
                                const std::string& node_name);

// What is wrong with activation `a` on `op`, or "" where the op takes it: the fused
// convolutions and batch_norm_moments apply none or relu. The graph's rule and the kernels'
// call check both ask this.
std::string act_refusal(OpKind op, Act a);

}  // namespace tg
