#include "graph/dtype_rules.h"

#include <fmt/format.h>

#include "graph/errors.h"

namespace tg {

namespace {

// Refuses integer inputs where the op does not take them, and float ids where it needs integers.
void check_int_inputs(OpKind op, const std::vector<DType>& in, const std::string& node) {
  const char* name = op_name(op);
  for (size_t i = 0; i < in.size(); ++i) {
    const int pos = static_cast<int>(i);
    if (op_input_is_index(op, pos)) {
      const char* what = op == OpKind::where                    ? "condition"
                         : op_in_family(op, "attention")          ? "key lengths"
                         : op_reads_rng(op)                       ? "rng state"
                         : op_index_must_be_int(op)               ? "ids"
                                                                  : "labels";
      if (op_reads_rng(op) && in[i] != DType::I64)
        graph_error("{} {}: input {} (the rng state) is {}; it is i64 [2], the seed and the offset: make it with "
                    "rng_state() (graph/dropout.h)", name, node, i, dtype_name(in[i]));
      if (op_index_must_be_int(op) && !dtype_is_int(in[i]))
        graph_error("{} {}: input {} (the {}) is {}; {} are integers: give it an i32 or i64 value (cast it "
                    "with to = i64)", name, node, i, what, dtype_name(in[i]), what);
      if (!dtype_is_int(in[i]) && in[i] != DType::F32)
        graph_error("{} {}: input {} (the {}) is {}; the {} must be i32, i64 or f32: cast it to i32", name, node, i,
                    what, dtype_name(in[i]), what);
      continue;
    }
    const bool cast_input = op == OpKind::cast;
    if (dtype_is_int(in[i]) && !op_moves_ints(op) && !cast_input)
      graph_error("{} {}: input {} is {}, an integer; {} takes float values only (integers are ids and labels: "
                  "embedding's ids and cross_entropy's labels read them, reshape, copy, slice and concat move them): "
                  "cast the value to f32 first", name, node, i, dtype_name(in[i]), name);
  }
}

}  // namespace

std::string channel_dtypes(OpKind op, const DType* in, int n, DType* d, DType* p) {
  // Three groups: the per-element inputs, gamma and beta, the running statistics.
  int first[3] = {-1, -1, -1};
  auto group = [op](int i) { return running_stats_input(op, i) ? 2 : channel_input(op, i) ? 1 : 0; };
  for (int i = 0; i < n; ++i)
    if (first[group(i)] < 0) first[group(i)] = i;
  auto dtype_of = [&](int g) { return in[first[g]]; };
  *d = first[0] >= 0 ? dtype_of(0) : DType::F32;
  *p = first[1] >= 0 ? dtype_of(1) : first[2] >= 0 ? dtype_of(2) : *d;
  static const char* const kGroups[] = {"per-element (x, dy)", "per-channel (gamma, beta)"};
  for (int i = 0; i < n; ++i) {
    const int g = group(i);
    if (g < 2 && in[i] != dtype_of(g))
      return fmt::format("input {} is {} but input {} is {}; the {} inputs share one dtype: give them the same", i,
                         dtype_name(in[i]), first[g], dtype_name(dtype_of(g)), kGroups[g]);
  }
  if (first[2] >= 0) {
    const DType s = dtype_of(2);
    if (op == OpKind::batch_norm_stats_update && s != DType::F32)
      return fmt::format("input {} (the running statistics, written in place) is {}; they are f32 master state, as "
                         "the parameters: make them f32",
                         first[2], dtype_name(s));
    if (s != *p && s != DType::F32)
      return fmt::format("input {} (the running statistics) is {} beside {} gamma and beta; the statistics are "
                         "gamma's dtype or f32: cast them to f32",
                         first[2], dtype_name(s), dtype_name(*p));
  }
  if (*p != *d && *p != DType::F32)
    return fmt::format("input {} (per channel: gamma, beta or running statistics) is {} beside {} activations; "
                       "the per-channel inputs are the activations' dtype or f32: cast them to f32",
                       first[1] >= 0 ? first[1] : first[2], dtype_name(*p), dtype_name(*d));
  return {};
}

DType infer_dtype(OpKind op, const std::vector<DType>& in, const Attrs& at, const std::string& node) {
  const char* name = op_name(op);
  for (size_t i = 0; i < in.size(); ++i)
    if (!dtype_is_known(in[i]))
      graph_error("{} {}: input {} has dtype #{}, which is not a dtype; use f32, bf16, f16, i32 or i64", name, node, i,
                  static_cast<int>(in[i]));
  check_int_inputs(op, in, node);
  DType out = DType::F32;
  if (op_traits(op).dtype_rule == op_table::kTypeCast) {
    out = at.to;
    if (!dtype_is_known(out))
      graph_error("{} {}: to = #{} is not a dtype; use f32, bf16, f16, i32 or i64", name, node, static_cast<int>(out));
    // A fused op that ends in a cast (layernorm_cast): float inputs of one dtype, a float result.
    if (op != OpKind::cast) {
      if (dtype_is_int(out))
        graph_error("{} {}: to = {}, an integer; {} gives a float result: make to f32, bf16 or f16", name, node,
                    dtype_name(out), name);
      for (size_t i = 1; i < in.size(); ++i)
        if (in[i] != in[0])
          graph_error("{} {}: input {} is {} but input 0 is {}; every input of {} has one dtype: give them the same",
                      name, node, i, dtype_name(in[i]), dtype_name(in[0]), name);
    }
  } else if (op_traits(op).dtype_rule == op_table::kTypeChannels) {
    DType d = DType::F32, p = DType::F32;
    const std::string err = channel_dtypes(op, in.data(), static_cast<int>(in.size()), &d, &p);
    if (!err.empty()) graph_error("{} {}: {}", name, node, err);
    out = channel_output_dtype(op, 0, d);
  } else if (op_traits(op).dtype_rule == op_table::kTypeProgram) {
    std::vector<DType> results;
    const std::string err = ew_program_dtypes(at.program, in, &results);
    if (!err.empty()) graph_error("{} {}: {}", name, node, err);
    out = results.back();
  } else if (op_is_f32_only(op)) {
    const int n = static_cast<int>(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      if (op_input_is_copy(op, static_cast<int>(i), n)) {
        const DType low = in[static_cast<size_t>(op_num_inputs(op) - 1)];  // the first group's copy
        if (in[i] != DType::BF16 && in[i] != DType::F16)
          graph_error("{} {}: input {} (a parameter's low-precision copy, last in its group) is {}; the copy is bf16 "
                      "or f16: give it the dtype the model's GEMMs read", name, node, i, dtype_name(in[i]));
        if (in[i] != low)
          graph_error("{} {}: input {} (a low-precision copy) is {} but the first group's is {}; every copy of one "
                      "update has one dtype: split the update by dtype", name, node, i, dtype_name(in[i]), dtype_name(low));
        continue;
      }
      if (op_input_is_low_multi_grad(op, static_cast<int>(i), n, in[i])) continue;  // widened exactly in the update
      if (in[i] != DType::F32 && !op_input_is_index(op, static_cast<int>(i)))
        graph_error("{} {}: input {} is {}; {} computes in f32 only (its inputs and its result are f32): "
                    "give it an f32 value", name, node, i, dtype_name(in[i]), name);
    }
  } else if (op_traits(op).dtype_rule == op_table::kTypeLogits) {
    for (size_t i = 1; i < in.size(); ++i)
      if (in[i] != DType::F32 && !op_input_is_index(op, static_cast<int>(i)))
        graph_error("{} {}: input {} is {}; only the logits (input 0) may be bf16 or f16, {}'s other inputs are f32: "
                    "give it an f32 value", name, node, i, dtype_name(in[i]), name);
    out = logits_output_dtype(op, in.empty() ? DType::F32 : in[0]);
  } else {
    // The first input that is not an index gives the dtype (input 0 but for where's condition);
    // a kTypeLowGrad op's 16-bit dy beside f32 inputs leaves it to input 1.
    size_t first = 0;
    while (first < in.size() && op_input_is_index(op, static_cast<int>(first))) ++first;
    if (in.size() > 1 && low_grad_input(op, in[0], in[1])) first = 1;
    out = first < in.size() ? in[first] : DType::F32;
    for (size_t i = first + 1; i < in.size(); ++i)
      if (in[i] != out && !op_input_is_index(op, static_cast<int>(i)))
        graph_error("{} {}: input {} is {} but input {} is {}; every input of {} has one dtype: give them the same",
                    name, node, i, dtype_name(in[i]), first, dtype_name(out), name);
  }
  return out;
}

std::vector<DType> infer_dtypes(OpKind op, const std::vector<DType>& in, const Attrs& at, const std::string& node) {
  if (op_traits(op).dtype_rule == op_table::kTypeChannels) {
    const DType out0 = infer_dtype(op, in, at, node);  // checks the rule
    DType d = DType::F32, p = DType::F32;
    channel_dtypes(op, in.data(), static_cast<int>(in.size()), &d, &p);
    std::vector<DType> out;
    for (int k = 0; k < op_num_outputs(op); ++k) out.push_back(k == 0 ? out0 : channel_output_dtype(op, k, d));
    return out;
  }
  return std::vector<DType>(static_cast<size_t>(op_num_outputs(op)), infer_dtype(op, in, at, node));
}

}  // namespace tg
