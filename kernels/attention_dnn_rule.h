#pragma once
// Which fused attention calls the CUDA backend may run through cuDNN's flash attention
// (kernels/cuda/attention_cudnn.h), as far as the call's geometry and dtype decide: the rule
// both executors apply, so that a shape takes the same path in each. cuDNN's own support
// check, asked when the shape's graph is built, may still refuse a case this admits; that
// refusal is recorded the same way (AttentionEngine::engine "own", with cuDNN's reason).
// Built without CUDA, so that the rule is tested on any machine.
#include <cstdint>
#include <string>

#include "graph/attention.h"
#include "graph/shape.h"

namespace tg {

// Head dims cuDNN's flash attention takes in both directions on sm_80 and later: multiples
// of 8 (16-byte rows) up to 128 (the project's own kernels stop there too).
inline constexpr int64_t kAttentionDnnMaxDh = 128;

// Empty when the rule admits the call; else why not, in words for a report row
// ("f32: cuDNN's flash attention takes bf16 and f16").
std::string attention_dnn_refusal(const AttentionGeometry& g, DType dt);

}  // namespace tg
