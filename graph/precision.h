#pragma once
// The precision policy: one choice for both executors, applied to the model as it is
// built. fp32 builds the model as written. bf16 and fp16 are autocast, as PyTorch's
// torch.autocast does it: the parameters stay f32 (the master weights the optimizer
// updates); each GEMM, and the bias_add after it, casts its operands to the low type and
// gives a low-type result (the tensor cores accumulate in f32); the ops that need range
// or accuracy (softmax, layernorm, reductions, mse losses) cast their inputs to f32;
// cross_entropy and its gradient take the logits as they come (they compute in f32 on the
// widened logits, the loss is f32, the logits' gradient has their dtype); every
// other op runs in its inputs' dtype, the widest of them when they differ. The casts are
// ordinary `cast` nodes, so autodiff sends each gradient back through them to f32, and the
// static and the dynamic executor run the same ops. tf32 keeps the graph f32 and is a
// choice of the CUDA backend's GEMMs (make_backend's tf32).
#include <string>
#include <unordered_map>

#include "graph/builder.h"
#include "graph/models.h"

namespace tg {

enum class Precision : uint8_t { fp32, tf32, bf16, fp16 };

const char* precision_name(Precision p);
// "fp32", "tf32", "bf16", "fp16"; false for anything else.
bool parse_precision(const std::string& s, Precision& out);
// The dtype the GEMMs compute in: bf16 or f16 under autocast, f32 otherwise.
DType precision_dtype(Precision p);

// What autocast does with an op's float inputs.
enum class AutocastRule : uint8_t {
  low,   // cast to the low type (the GEMMs and their bias_add)
  f32,   // cast to f32 (softmax, layernorm, reductions, mse losses, updates)
  keep,  // leave as they are; cast to the widest when they differ (elementwise, layout);
         // cross_entropy's logits as they are, its other float inputs to f32
  channels,  // the batchnorm family: the activations as they are (f32 when they differ), the
             // per-channel inputs (gamma, beta, running statistics) f32
};
AutocastRule autocast_rule(OpKind op);

// A Builder that applies the policy to every op on its way to `inner`. Leaves (inputs,
// parameters, optimizer state) pass through unchanged. A value is cast to a dtype at
// most once per builder: a weight read by two GEMMs is cast once, as autocast's cache does.
class AutocastBuilder final : public Builder {
 public:
  AutocastBuilder(Builder& inner, Precision p) : inner_(inner), low_(precision_dtype(p)) {}
  Value input(const std::string& name, const Shape& shape, DType dtype = DType::F32) override {
    return inner_.input(name, shape, dtype);
  }
  Value parameter(const std::string& name, const Shape& shape, ParamInit init = {},
                  DType dtype = DType::F32) override {
    return inner_.parameter(name, shape, init, dtype);
  }
  Value apply(OpKind op, const std::vector<Value>& inputs, const Attrs& attrs = {},
              const std::string& name = "") override;
  void mark_output(const Value& v) override { inner_.mark_output(v); }
  Value optimizer_state(const Value& param, const std::string& name) override {
    return inner_.optimizer_state(param, name);
  }
  Value training_state(const std::string& name, const Shape& shape, ParamInit init,
                       DType dtype = DType::F32) override {
    return inner_.training_state(name, shape, std::move(init), dtype);
  }
  bool eval() const override { return inner_.eval(); }

 private:
  Value cast_to(const Value& v, DType dt);

  Builder& inner_;
  DType low_;
  std::unordered_map<int64_t, Value> casts_;  // (value id, dtype) -> its cast
};

// The model under the policy: `model` itself for fp32 and tf32, else the model built
// through an AutocastBuilder.
ModelFn with_precision(ModelFn model, Precision p);

}  // namespace tg
