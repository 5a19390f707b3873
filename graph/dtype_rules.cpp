#include "graph/dtype_rules.h"

#include "graph/errors.h"

namespace tg {

DType infer_dtype(OpKind op, const std::vector<DType>& in, const Attrs& at, const std::string& node) {
  const char* name = op_name(op);
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] != DType::F32 && in[i] != DType::BF16 && in[i] != DType::F16)
      graph_error("{} {}: input {} has dtype #{}, which is not a dtype; use f32, bf16 or f16", name, node, i,
                  static_cast<int>(in[i]));
  DType out = DType::F32;
  if (op_traits(op).dtype_rule == op_table::kTypeCast) {
    out = at.to;
    if (out != DType::F32 && out != DType::BF16 && out != DType::F16)
      graph_error("{} {}: to = #{} is not a dtype; use f32, bf16 or f16", name, node, static_cast<int>(out));
  } else if (op_is_f32_only(op)) {
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i] != DType::F32)
        graph_error("{} {}: input {} is {}; {} computes in f32 only (its inputs and its result are f32): "
                    "give it an f32 value", name, node, i, dtype_name(in[i]), name);
  } else {
    out = in.empty() ? DType::F32 : in[0];
    for (size_t i = 1; i < in.size(); ++i)
      if (in[i] != out)
        graph_error("{} {}: input {} is {} but input 0 is {}; every input of {} has one dtype: give them the same",
                    name, node, i, dtype_name(in[i]), dtype_name(out), name);
  }
  return out;
}

std::vector<DType> infer_dtypes(OpKind op, const std::vector<DType>& in, const Attrs& at, const std::string& node) {
  return std::vector<DType>(static_cast<size_t>(op_num_outputs(op)), infer_dtype(op, in, at, node));
}

}  // namespace tg
