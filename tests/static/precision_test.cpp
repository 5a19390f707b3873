// The precision policy (graph/precision.h) on the CPU backend: what autocast records,
// static == dynamic bitwise in bf16 and fp16, training that still learns, and every graph
// pass on an autocast graph against the unfused one.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "graph/precision.h"
#include "graph/training.h"
#include "graph/validate.h"
#include "tests/common/models.h"
#include "tests/static/vs_dynamic_test.h"

namespace tg {
namespace {

std::shared_ptr<Backend> cpu() { return std::shared_ptr<Backend>(make_cpu_backend()); }

using testing::count_op;

// Casts cross_entropy's logits to f32 on their way to `inner`: the graph autocast records
// when it casts them, as it did before cross_entropy took 16-bit logits.
class F32LogitsBuilder final : public Builder {
 public:
  explicit F32LogitsBuilder(Builder& inner) : inner_(inner) {}
  Value input(const std::string& name, const Shape& shape, DType dtype = DType::F32) override {
    return inner_.input(name, shape, dtype);
  }
  Value parameter(const std::string& name, const Shape& shape, ParamInit init = {}, DType dtype = DType::F32) override {
    return inner_.parameter(name, shape, init, dtype);
  }
  Value apply(OpKind op, const std::vector<Value>& inputs, const Attrs& attrs = {},
              const std::string& name = "") override {
    if (op != OpKind::cross_entropy || inputs[0].dtype == DType::F32) return inner_.apply(op, inputs, attrs, name);
    std::vector<Value> in = inputs;
    in[0] = cast(inner_, in[0], DType::F32);
    return inner_.apply(op, in, attrs, name);
  }
  void mark_output(const Value& v) override { inner_.mark_output(v); }
  Value optimizer_state(const Value& param, const std::string& name) override {
    return inner_.optimizer_state(param, name);
  }
  Value training_state(const std::string& name, const Shape& shape, ParamInit init, DType dtype = DType::F32) override {
    return inner_.training_state(name, shape, std::move(init), dtype);
  }
  bool eval() const override { return inner_.eval(); }

 private:
  Builder& inner_;
};

// The model with its cross_entropy's logits cast to f32 under the precision policy.
ModelFn with_f32_logits(const ModelFn& model) {
  return [model](Builder& b) {
    F32LogitsBuilder f(b);
    return model(f);
  };
}

}  // namespace

TEST_CASE("precision: names parse back, and each gives its GEMM dtype") {
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::bf16, Precision::fp16}) {
    Precision back{};
    CHECK(parse_precision(precision_name(p), back));
    CHECK(back == p);
  }
  Precision ignored{};
  CHECK_FALSE(parse_precision("fp8", ignored));
  CHECK(precision_dtype(Precision::tf32) == DType::F32);
  CHECK(precision_dtype(Precision::bf16) == DType::BF16);
  CHECK(precision_dtype(Precision::fp16) == DType::F16);
}

TEST_CASE("precision: autocast records GEMMs in the low type, f32 parameters, gradients and losses") {
  const ModelFn model = testing::transformer_model(testing::transformer_config(2, 8, 16, 2));
  for (Precision p : {Precision::bf16, Precision::fp16}) {
    const std::string label = precision_name(p);
    CAPTURE(label);
    const Graph g = build_training_graph(with_precision(model, p));
    CHECK(validation_errors(g).empty());
    CHECK(count_op(g, OpKind::cast) > 0);
    for (const ValueInfo& v : g.values) {
      if (v.role == Role::parameter || v.role == Role::optimizer_state || v.role == Role::gradient)
        CHECK_MESSAGE(v.dtype == DType::F32, v.name, " is ", dtype_name(v.dtype));
    }
    bool low_gemm = false;
    for (const Node& n : g.nodes) {
      const DType out = n.outputs.empty() ? DType::F32 : g.values[static_cast<size_t>(n.outputs[0])].dtype;
      if (n.op == OpKind::matmul) {
        CHECK(out == precision_dtype(p));
        low_gemm = true;
      }
      if (n.op == OpKind::softmax || n.op == OpKind::layernorm || n.op == OpKind::mse_loss) CHECK(out == DType::F32);
    }
    CHECK(low_gemm);
    // A weight read by two GEMMs is cast once per step, not once per use.
    const Graph fp32 = build_training_graph(model);
    CHECK(count_op(g, OpKind::matmul) == count_op(fp32, OpKind::matmul));
  }
  // fp32 and tf32 record the model as written.
  const Graph a = build_training_graph(with_precision(model, Precision::tf32));
  CHECK(count_op(a, OpKind::cast) == 0);
}

TEST_CASE("precision: static == dynamic bitwise on the CPU in bf16 and fp16: mlp and transformer_block") {
  for (Precision p : {Precision::bf16, Precision::fp16}) {
    const std::string label = precision_name(p);
    CAPTURE(label);
    const MlpConfig m = testing::mlp_config(8, 24, 32, 4, 6);
    testing::check_static_vs_dynamic(cpu, testing::mlp_model(m), "mlp", false, 0, p);
    MlpConfig ce = m;
    ce.loss = MlpConfig::Loss::cross_entropy;
    testing::check_static_vs_dynamic(cpu, testing::mlp_model(ce), "mlp ce", false, ce.out, p);
    testing::check_static_vs_dynamic(cpu, testing::transformer_model(testing::transformer_config(2, 8, 16, 2)),
                                     "transformer", false, 0, p);
  }
}

TEST_CASE("precision: bf16 and fp16 training learns, and stays near fp32's loss curve") {
  const ModelFn model = testing::mlp_model(testing::mlp_config(16, 24, 32, 3, 6));
  const std::vector<float> ref = testing::train_losses(model, Precision::fp32, PassSet::none(), 40);
  REQUIRE(ref.back() < 0.5f * ref.front());
  for (Precision p : {Precision::bf16, Precision::fp16}) {
    const std::string label = precision_name(p);
    CAPTURE(label);
    const std::vector<float> low = testing::train_losses(model, p, PassSet::none(), 40);
    CHECK(low.back() < 0.5f * low.front());
    double worst = 0;
    for (size_t i = 0; i < low.size(); ++i) worst = std::max(worst, std::fabs(static_cast<double>(low[i]) - ref[i]) / ref[i]);
    // bf16 keeps 8 significant bits, f16 11: the curves stay within 1% and 0.1% of fp32.
    MESSAGE(label, ": largest relative loss difference to fp32 over 40 steps ", worst);
    CHECK(worst < (p == Precision::bf16 ? 0.01 : 0.001));
  }
}

// cross_entropy computes in f32 on the widened logits and rounds its gradient once to the
// logits' dtype: the loss curve is the one of the logits cast to f32 (and the f32 gradient
// cast back), bit for bit, and the 16-bit graph has neither cast.
TEST_CASE("precision: cross_entropy on 16-bit logits trains to the bits of the logits cast to f32") {
  MlpConfig mc = testing::mlp_config(8, 24, 32, 3, 6);
  mc.loss = MlpConfig::Loss::cross_entropy;
  const struct {
    const char* name;
    ModelFn model;
    int64_t classes;
  } models[] = {{"mlp", testing::mlp_model(mc), mc.out},
                {"token model", testing::token_model(11, 3), 11},
                {"gpt2 tiny", testing::gpt2_model(testing::tiny_gpt2_config()), testing::tiny_gpt2_config().vocab}};
  for (const auto& m : models)
    for (Precision p : {Precision::bf16, Precision::fp16})
      for (bool fused : {false, true}) {
        const std::string label = std::string(m.name) + " " + precision_name(p) + (fused ? " all passes" : "");
        CAPTURE(label);
        const PassSet passes = fused ? PassSet::all() : PassSet::none();
        const std::vector<float> direct = testing::train_losses(m.model, p, passes, 5, nullptr, m.classes);
        const std::vector<float> cast = testing::train_losses(with_f32_logits(m.model), p, passes, 5, nullptr, m.classes);
        REQUIRE(direct.size() == cast.size());
        CHECK(std::isfinite(direct.back()));
        CHECK(std::memcmp(direct.data(), cast.data(), direct.size() * sizeof(float)) == 0);
        if (fused) continue;
        // No cast reads the logits: the cross_entropy nodes take the GEMM's 16-bit result.
        const Graph g = build_training_graph(with_precision(m.model, p));
        for (const Node& n : g.nodes)
          if (n.op == OpKind::cross_entropy || n.op == OpKind::cross_entropy_grad) {
            CHECK(g.values[static_cast<size_t>(n.inputs[0])].dtype == precision_dtype(p));
            CHECK(g.values[static_cast<size_t>(n.outputs[0])].dtype ==
                  (n.op == OpKind::cross_entropy ? DType::F32 : precision_dtype(p)));
          }
      }
}

TEST_CASE("precision: every graph pass on a bf16 autocast graph tracks the unfused graph") {
  for (const ModelFn& model : {testing::mlp_model(testing::mlp_config(8, 24, 32, 3, 6)),
                               testing::transformer_model(testing::transformer_config(2, 8, 16, 2))}) {
    const std::vector<float> plain = testing::train_losses(model, Precision::bf16, PassSet::none(), 6);
    const std::vector<float> fused = testing::train_losses(model, Precision::bf16, PassSet::all(), 6);
    for (size_t i = 0; i < plain.size(); ++i) {
      CAPTURE(i);
      // A GEMM epilogue rounds once where the unfused ops round after each: bf16's half ulp.
      CHECK(std::fabs(fused[i] - plain[i]) <= 0.02 * std::fabs(plain[i]) + 1e-3);
    }
  }
}

}  // namespace tg
