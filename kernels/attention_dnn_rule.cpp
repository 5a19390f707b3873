#include "kernels/attention_dnn_rule.h"

#include <fmt/format.h>

namespace tg {

std::string attention_dnn_refusal(const AttentionGeometry& g, DType dt) {
  if (dt != DType::BF16 && dt != DType::F16)
    return fmt::format("{}: cuDNN's flash attention takes bf16 and f16", dtype_name(dt));
  if (g.dh % 8 != 0 || g.dh < 8 || g.dh > kAttentionDnnMaxDh)
    return fmt::format("heads of {} dims: cuDNN's flash attention takes multiples of 8 up to {}", g.dh,
                       kAttentionDnnMaxDh);
  if (g.batch < 1 || g.seq < 1) return fmt::format("an empty call (batch {}, sequence {})", g.batch, g.seq);
  return {};
}

}  // namespace tg
