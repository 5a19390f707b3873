// The rule that decides which attention calls the CUDA backend may send to cuDNN's flash
// attention (kernels/attention_dnn_rule.h): what it admits and the reason it gives for what it
// does not, which becomes an attention_engine report row. CPU only: the rule needs no device.
#include <doctest/doctest.h>

#include <string>

#include "kernels/attention_dnn_rule.h"

namespace tg {

TEST_CASE("attention cuDNN rule: bf16 and f16 heads of 8 to 128 dims in multiples of 8 are admitted") {
  for (const DType dt : {DType::BF16, DType::F16})
    for (const int64_t dh : {8, 32, 64, 72, 128}) {
      CAPTURE(dh);
      CHECK(attention_dnn_refusal(AttentionGeometry{8, 12, 1024, dh}, dt).empty());
      CHECK(attention_dnn_refusal(AttentionGeometry{1, 1, 1, dh}, dt).empty());  // one query, one key
    }
}

TEST_CASE("attention cuDNN rule: f32, other head sizes and empty calls are refused, saying why") {
  const AttentionGeometry gpt2{8, 12, 1024, 64};
  CHECK(attention_dnn_refusal(gpt2, DType::F32) == "f32: cuDNN's flash attention takes bf16 and f16");
  for (const int64_t dh : {4, 12, 60, 136, 256}) {
    CAPTURE(dh);
    const std::string why = attention_dnn_refusal(AttentionGeometry{2, 2, 16, dh}, DType::BF16);
    CHECK(why == "heads of " + std::to_string(dh) + " dims: cuDNN's flash attention takes multiples of 8 up to 128");
  }
  CHECK(attention_dnn_refusal(AttentionGeometry{0, 2, 16, 64}, DType::BF16) == "an empty call (batch 0, sequence 16)");
  CHECK(attention_dnn_refusal(AttentionGeometry{2, 2, 0, 64}, DType::F16) == "an empty call (batch 2, sequence 0)");
}

}  // namespace tg
