#pragma once
// The dtype rule of every op, from the op table's dtype column (graph/op.h).
#include <string>
#include <vector>

#include "graph/attrs.h"
#include "graph/op.h"
#include "graph/shape.h"

namespace tg {

// The dtype of each output of `op` over inputs of `inputs` dtypes (op_num_outputs(op) of
// them), or a GraphError naming the node, the input whose dtype breaks the rule, and
// how to fix it. Call it after the shape rule, which checks the arity.
std::vector<DType> infer_dtypes(OpKind op, const std::vector<DType>& inputs, const Attrs& attrs,
                                const std::string& node_name);
// The dtype every output of the op has (one per op; f32 for updates, which have none).
DType infer_dtype(OpKind op, const std::vector<DType>& inputs, const Attrs& attrs, const std::string& node_name);

}  // namespace tg
