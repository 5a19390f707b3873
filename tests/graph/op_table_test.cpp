// What the compiler cannot check about the op table (graph/op.h): each column agrees
// with the rule it stands for. A new op that compiles (its switches are complete)
// but whose row or rules disagree fails here, naming the op and what is missing.
// The last case checks that the graph-file reference (docs/graph-format.md) names it.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <exception>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "graph/autodiff.h"
#include "graph/builder.h"
#include "graph/dtype_rules.h"
#include "graph/errors.h"
#include "graph/json_io.h"
#include "graph/shape_inference.h"
#include "graph/validate.h"
#include "tests/common/op_samples.h"

namespace tg::testing {

namespace {

// One node of `op` over fresh leaves of the sample's shapes: parameters (and a
// velocity) for the updates, which validation requires, and update_scale's scaler as
// optimizer state; inputs otherwise (a guarded update's found-inf flag too).
struct OneNode {
  Graph g;
  std::vector<Value> ins;
  Value out;
};
void record(OneNode& r, OpKind op, const OpSample& s) {
  RecordingBuilder b(r.g);
  for (size_t i = 0; i < s.in.size(); ++i) {
    const std::string name = "in" + std::to_string(i);
    // Per group of an update: the parameter, its gradient, the state it writes; a guarded
    // update's flag after the groups.
    const bool flag = i >= static_cast<size_t>(op_group_inputs(op, static_cast<int>(s.in.size())));
    const size_t pos = op_is_update(op) && !flag ? i % static_cast<size_t>(op_num_inputs(op)) : 1;
    if (op == OpKind::update_scale && i == 0) r.ins.push_back(b.training_state(name, s.in[i], optimizer_state_init()));
    else if (op == OpKind::rng_advance) r.ins.push_back(b.training_state(name, s.in[i], optimizer_state_init(), DType::I64));
    else if (pos == 0) r.ins.push_back(b.parameter(name, s.in[i]));
    else if (sample_input_is_copy(s, i)) {
      // A low-precision copy: optimizer state of the copy's dtype (the low_copies pass makes it).
      Value c = optimizer_state_of_shape(b, s.in[i], name);
      r.g.values[static_cast<size_t>(c.id)].dtype = s.copy_dtype;
      c.dtype = s.copy_dtype;
      r.ins.push_back(c);
    } else if (op_update_writes(op, static_cast<int>(i), static_cast<int>(s.in.size())))
      r.ins.push_back(optimizer_state_of_shape(b, s.in[i], name));
    else r.ins.push_back(b.input(name, s.in[i], sample_input_dtype(op, s, i)));
  }
  r.out = b.apply(op, r.ins, s.attrs, "node");
  if (r.out.valid()) b.mark_output(r.out);
}

// Calls f(op, sample, node) for every sample of every op, recorded as one node.
template <typename F>
void for_each_recorded_sample(const F& f) {
  for (OpKind op : all_ops()) {
    const std::string op_label = op_name(op);
    CAPTURE(op_label);
    for (const OpSample& s : op_samples(op)) {
      CAPTURE(s.what);
      OneNode r;
      record(r, op, s);
      f(op, s, r);
    }
  }
}

}  // namespace

TEST_CASE("op table: every op has samples its shape rule accepts, with the table's arity") {
  for (OpKind op : all_ops()) {
    const std::string op_label = op_name(op);
    CAPTURE(op_label);
    const std::vector<OpSample> samples = op_samples(op);
    CHECK_MESSAGE(!samples.empty(), op_label, " has no samples in tests/common/op_samples.h");
    for (const OpSample& s : samples) {
      CAPTURE(s.what);
      CHECK(op_arity_ok(op, static_cast<int>(s.in.size())));
      CHECK_NOTHROW(infer_shape(op, s.in, s.attrs, "sample"));
    }
    OpKind parsed{};
    CHECK(parse_op(op_name(op), parsed));
    CHECK(parsed == op);
  }
}

TEST_CASE("op table: the dtype column: kTypeSame ops keep their inputs' dtype, kTypeF32 ops refuse others, "
          "kTypeLogits ops take 16-bit logits and f32 dloss, kTypeLowGrad ops a 16-bit dy beside f32, kTypeChannels "
          "ops 16-bit activations beside 16-bit or f32 per-channel inputs") {
  for (OpKind op : all_ops()) {
    const std::string op_label = op_name(op);
    CAPTURE(op_label);
    for (const OpSample& s : op_samples(op)) {
      CAPTURE(s.what);
      const std::vector<DType> f32 = sample_dtypes(op, s);
      CHECK(infer_dtypes(op, f32, s.attrs, "sample") == std::vector<DType>(static_cast<size_t>(op_num_outputs(op)), DType::F32));
      if (op_traits(op).dtype_rule == op_table::kTypeCast) continue;  // its own case below
      for (DType low : {DType::BF16, DType::F16}) {
        const std::vector<DType> all_low = sample_dtypes(op, s, low);
        if (s.in.empty()) continue;
        bool any_float = false;  // rng_advance's one input is the rng state: nothing to refuse
        for (size_t i = 0; i < s.in.size(); ++i) any_float = any_float || !op_input_is_index(op, static_cast<int>(i));
        if (op_is_f32_only(op) && !any_float) continue;
        if (op_is_f32_only(op)) {
          CHECK_THROWS_WITH_AS(infer_dtypes(op, all_low, s.attrs, "sample"),
                               doctest::Contains("computes in f32 only"), GraphError);
          continue;
        }
        if (op_traits(op).dtype_rule == op_table::kTypeLogits) {
          // The logits' dtype on the gradient, f32 on the loss; the other float inputs are f32 only.
          CHECK(infer_dtypes(op, all_low, s.attrs, "sample") == std::vector<DType>{logits_output_dtype(op, low)});
          std::vector<DType> low_dloss = all_low;
          for (size_t i = 1; i < low_dloss.size(); ++i)
            if (!op_input_is_index(op, static_cast<int>(i))) low_dloss[i] = low;
          if (low_dloss != all_low)
            CHECK_THROWS_WITH_AS(infer_dtypes(op, low_dloss, s.attrs, "sample"),
                                 doctest::Contains("only the logits (input 0) may be bf16 or f16"), GraphError);
          continue;
        }
        if (op_traits(op).dtype_rule == op_table::kTypeChannels) {
          // The activations' dtype on the outputs, f32 on a channel's sums.
          std::vector<DType> want;
          for (int k = 0; k < op_num_outputs(op); ++k) want.push_back(channel_output_dtype(op, k, low));
          CHECK(infer_dtypes(op, all_low, s.attrs, "sample") == want);
          const DType other = low == DType::BF16 ? DType::F16 : DType::BF16;
          std::vector<DType> wrong_channels = all_low, all_16 = all_low, mixed_elements = all_low;
          int first_channel = -1, second_element = -1, elements = 0;
          for (size_t i = 0; i < all_low.size(); ++i) {
            if (!channel_input(op, static_cast<int>(i))) {
              if (++elements == 2) second_element = static_cast<int>(i);
              continue;
            }
            if (first_channel < 0) first_channel = static_cast<int>(i);
            wrong_channels[i] = other;
            all_16[i] = low;
          }
          if (first_channel >= 0) {
            const bool stats = op == OpKind::batch_norm_stats_update;
            CHECK_THROWS_WITH_AS(infer_dtypes(op, wrong_channels, s.attrs, "sample"),
                                 doctest::Contains(stats ? "they are f32 master state" : "are the activations' dtype or f32"),
                                 GraphError);
            if (stats)
              CHECK_THROWS_WITH_AS(infer_dtypes(op, all_16, s.attrs, "sample"),
                                   doctest::Contains("they are f32 master state"), GraphError);
            else
              CHECK(infer_dtypes(op, all_16, s.attrs, "sample") == want);
          }
          // The running statistics may stay f32 beside 16-bit gamma and beta (a bf16 graph's
          // batch norms keep f32 statistics); 16-bit statistics beside f32 gamma are refused.
          int stats_input = -1;
          for (size_t i = 0; i < all_low.size(); ++i)
            if (running_stats_input(op, static_cast<int>(i))) stats_input = static_cast<int>(i);
          if (stats_input >= 0 && op != OpKind::batch_norm_stats_update) {
            std::vector<DType> f32_stats = all_16, low_stats = all_16;
            f32_stats[static_cast<size_t>(stats_input)] = DType::F32;
            CHECK(infer_dtypes(op, f32_stats, s.attrs, "sample") == want);
            for (size_t i = 0; i < low_stats.size(); ++i)
              if (channel_input(op, static_cast<int>(i)) && static_cast<int>(i) != stats_input) low_stats[i] = DType::F32;
            CHECK_THROWS_WITH_AS(infer_dtypes(op, low_stats, s.attrs, "sample"),
                                 doctest::Contains("the statistics are gamma's dtype or f32"), GraphError);
          }
          if (second_element >= 0) {
            mixed_elements[static_cast<size_t>(second_element)] = DType::F32;
            CHECK_THROWS_WITH_AS(infer_dtypes(op, mixed_elements, s.attrs, "sample"),
                                 doctest::Contains("per-element (x, dy) inputs share one dtype"), GraphError);
          }
          continue;
        }
        CHECK(infer_dtypes(op, all_low, s.attrs, "sample") == std::vector<DType>(static_cast<size_t>(op_num_outputs(op)), low));
        if (op_traits(op).dtype_rule == op_table::kTypeLowGrad) {
          // A 16-bit dy beside f32 inputs gives f32; an f32 dy beside 16-bit inputs is refused.
          std::vector<DType> low_dy = f32;
          low_dy[0] = low;
          CHECK(infer_dtypes(op, low_dy, s.attrs, "sample") ==
                std::vector<DType>(static_cast<size_t>(op_num_outputs(op)), DType::F32));
          std::vector<DType> f32_dy = all_low;
          f32_dy[0] = DType::F32;
          const std::string why = fmt::format("input 1 is {} but input 0 is f32", dtype_name(low));
          CHECK_THROWS_WITH_AS(infer_dtypes(op, f32_dy, s.attrs, "sample"), doctest::Contains(why.c_str()), GraphError);
          continue;
        }
        if (s.in.size() < 2 || op_input_is_index(op, static_cast<int>(s.in.size()) - 1)) continue;
        std::vector<DType> mixed = all_low;
        mixed.back() = DType::F32;
        int first = 0;  // the input that gives the dtype: input 0, but for where's condition
        while (op_input_is_index(op, first)) ++first;
        // A program types its values by its instructions (graph/ew_program.h): the first op
        // that reads the f32 input beside a 16-bit value refuses it.
        const std::string why = op_traits(op).dtype_rule == op_table::kTypeProgram
                                    ? std::string("both operands of an op have one dtype")
                                    : fmt::format("input {} is f32 but input {} is {}", mixed.size() - 1, first, dtype_name(low));
        CHECK_THROWS_WITH_AS(infer_dtypes(op, mixed, s.attrs, "sample"), doctest::Contains(why.c_str()), GraphError);
      }
    }
  }
}

TEST_CASE("op table: cast gives attrs.to from every dtype, and its gradient goes back to the input's dtype") {
  const DType all[] = {DType::F32, DType::BF16, DType::F16};
  for (DType from : all)
    for (DType to : all) {
      Graph g;
      RecordingBuilder b(g);
      const Value x = b.input("x", {3, 4}, from);
      const Value y = cast(b, x, to);
      CHECK(y.dtype == to);
      CHECK(g.values[static_cast<size_t>(y.id)].dtype == to);
      const TapeEntry e{OpKind::cast, g.nodes.back().attrs, {x}, y};
      const std::vector<Value> dx = vjp(b, e, b.input("dy", {3, 4}, to), {true});
      REQUIRE(dx.size() == 1);
      CHECK(dx[0].dtype == from);
      b.mark_output(dx[0]);
      CHECK(validation_errors(g).empty());
    }
  Attrs bad;
  bad.to = static_cast<DType>(7);
  CHECK_THROWS_WITH_AS(infer_dtypes(OpKind::cast, {DType::F32}, bad, "c"), doctest::Contains("to = #7 is not a dtype"),
                       GraphError);
}

TEST_CASE("op table: layernorm_cast gives attrs.to from inputs of one float dtype, and refuses the rest") {
  Attrs to16;
  to16.eps = 1e-5f;
  to16.to = DType::BF16;
  const std::vector<DType> f32(3, DType::F32), bf16(3, DType::BF16);
  CHECK(infer_dtypes(OpKind::layernorm_cast, f32, to16, "n") == std::vector<DType>{DType::BF16});
  CHECK(infer_dtypes(OpKind::layernorm_cast, bf16, to16, "n") == std::vector<DType>{DType::BF16});
  CHECK_THROWS_WITH_AS(infer_dtypes(OpKind::layernorm_cast, {DType::F32, DType::BF16, DType::F32}, to16, "n"),
                       doctest::Contains("input 1 is bf16 but input 0 is f32"), GraphError);
  CHECK_THROWS_WITH_AS(infer_dtypes(OpKind::layernorm_cast, {DType::I64, DType::F32, DType::F32}, to16, "n"),
                       doctest::Contains("an integer"), GraphError);
  Attrs to_int = to16;
  to_int.to = DType::I32;
  CHECK_THROWS_WITH_AS(infer_dtypes(OpKind::layernorm_cast, f32, to_int, "n"), doctest::Contains("gives a float result"),
                       GraphError);
}

TEST_CASE("op table: the gradient rule gives a gradient for exactly the inputs of the grad column") {
  for_each_recorded_sample([](OpKind op, const OpSample& s, OneNode& r) {
    RecordingBuilder b(r.g);
    TapeEntry e{op, s.attrs, r.ins, r.out};
    const Value dy = r.out.valid() ? b.input("dy", r.out.shape) : Value{};
    const std::vector<bool> needs(s.in.size(), true);
    if (!op_is_differentiable(op)) {
      CHECK_THROWS_WITH_AS(vjp(b, e, dy, needs), doctest::Contains("has no gradient rule"), GraphError);
      return;
    }
    // vjp() throws when a rule leaves out an input the grad column marks: that is one
    // failed check of this op, and the loop goes on to the next sample and op.
    std::vector<Value> g;
    try {
      g = vjp(b, e, dy, needs);
    } catch (const std::exception& err) {
      FAIL_CHECK(std::string(op_name(op)), ": ", std::string(err.what()));
      return;
    }
    REQUIRE(g.size() == s.in.size());
    for (size_t i = 0; i < g.size(); ++i) {
      CAPTURE(i);
      const bool has = g[i].valid(), marked = op_has_gradient_for(op, static_cast<int>(i));
      CHECK_MESSAGE(has == marked, std::string(op_name(op)), " input ", i, ": the grad column and vjp() disagree");
      if (g[i].valid()) CHECK(g[i].shape == s.in[i]);
    }
  });
}

TEST_CASE("op table: every attribute a sample sets survives a graph file (the attrs column lists it)") {
  for_each_recorded_sample([](OpKind op, const OpSample&, OneNode& r) {
    const Graph back = load_graph_json(save_graph_json(r.g), "round trip");
    const Node* n = nullptr;
    for (const Node& x : back.nodes)
      if (x.name == "node") n = &x;
    REQUIRE(n != nullptr);
    CHECK_MESSAGE(n->attrs == r.g.nodes.back().attrs, std::string(op_name(op)),
                  ": an attribute of the sample was dropped on save: add it to the op's attrs column");
  });
}

TEST_CASE("op table: in-place and view ops may share input 0, and the kernel files of each family exist") {
  namespace fs = std::filesystem;
  for (OpKind op : all_ops()) {
    const std::string op_label = op_name(op);
    CAPTURE(op_label);
    const bool shares_input0 = op_can_run_in_place(op) || op_is_view(op);
    if (shares_input0) CHECK(op_output_may_alias(op, 0));
    if (op_can_run_in_place(op)) CHECK(op_reads_attr(op, AttrId::in_place));
    const std::string family = op_traits(op).family;
    CHECK_MESSAGE(fs::exists("kernels/cpu/" + family + ".cpp"), "no kernels/cpu/", family, ".cpp for ", op_label);
    // The matmul family's CUDA side is a folder of its own, the GEMM family's.
    const bool cuda_file = fs::exists("kernels/cuda/" + family + ".cu") || fs::exists("kernels/cuda/" + family + ".cpp") ||
                           (family == "matmul" && fs::is_directory("kernels/cuda/gemm"));
    CHECK_MESSAGE(cuda_file, "no kernels/cuda/", family, ".cu for ", op_label);
  }
}

// The file is read from the working directory, which ctest sets to the source tree (as
// for the kernel files above).
TEST_CASE("op table: docs/graph-format.md names every op") {
  std::ifstream in("docs/graph-format.md");
  REQUIRE_MESSAGE(in.good(), "cannot read docs/graph-format.md: run from the source tree, as ctest does");
  std::ostringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  for (OpKind op : all_ops()) {
    const std::string op_label = op_name(op);
    const bool named = doc.find("`" + op_label + "`") != std::string::npos;
    CHECK_MESSAGE(named, "docs/graph-format.md does not name `", op_label,
                  "`: add it to its ops and attributes (\"Ops and attributes\" or \"Fused ops\")");
  }
}

}  // namespace tg::testing
