#include "graph/dropout.h"

namespace tg {

Value rng_state(Builder& b) {
  return b.training_state(kRngStateName, Shape{2}, ParamInit{ParamInit::Kind::seed, 0.0f}, DType::I64);
}

Value dropout(Builder& b, Value x, float p, int64_t rng_stream) {
  if (b.eval() || p == 0.0f) return x;
  Attrs at;
  at.p = p;
  at.rng_stream = rng_stream;
  return b.apply(OpKind::dropout, {x, rng_state(b)}, at);
}

void advance_rng(Builder& b, const Value& rng) {
  if (rng.valid()) b.apply(OpKind::rng_advance, {rng}, {}, std::string(kRngStateName) + ".advance");
}

}  // namespace tg
