#pragma once
// Which engine ran each fused attention shape on a backend, for reports: the CUDA backend's
// cuDNN flash attention or its own kernels, and why (kernels/cuda/attention_cudnn.h), in a
// form that needs no CUDA header, so that a CPU build lists none.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/backend.h"

namespace tg {

struct AttentionEngine {
  std::string op;        // attention, attention_lse, attention_grad or attention_fwd_lse
  std::string dtype;     // f32, bf16, f16
  std::string geometry;  // "b8 h12 s1024 d64", then " causal", " key_lengths"
  std::string engine;    // cuDNN's plan name, or "own" (kernels/cuda/attention.cu)
  std::string why;       // why the own kernels run it; empty when cuDNN does
  int64_t workspace_bytes = 0;
  double build_ms = 0;  // what the shape's first call paid for building cuDNN's graph (host time)
};

// Every attention shape the backend has met so far, in the order met; empty on the CPU and
// with attention_cudnn off.
std::vector<AttentionEngine> attention_engines(const Backend& b);

}  // namespace tg
