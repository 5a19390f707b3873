#pragma once
// attention, attention_lse, attention_fwd_lse and attention_grad in bf16 and f16 through
// cuDNN's fused flash attention (scaled dot product attention, the cuDNN frontend's graph
// API): the products on the tensor cores, the S x S scores never in memory, as the
// project's own kernels (kernels/cuda/attention.cu), which stay the path for f32 and for
// every case cuDNN does not take.
//
// The ops' conventions (graph/attention.h) map onto cuDNN's as follows:
// - q, k, v, the output and the gradients are head views [B, S, heads * dh]: cuDNN tensors of
//   dims {B, heads, S, dh} and strides {S * heads * dh, dh, heads * dh, 1}, read in place.
// - alpha is the attention scale; causal ("key <= query", Sq == Sk) is cuDNN's causal mask
//   aligned top left (a diagonal band with right bound 0).
// - the key lengths are cuDNN's padding mask: seq_len_q = S for every sequence (every query
//   row is computed), seq_len_kv = lengths clamped to [0, S], both int32 [B, 1, 1, 1] made by
//   a small kernel in the workspace. The ops promise zeros for a sequence with no key (its
//   output, gradients and statistic) and for dk, dv past each length, whatever cuDNN writes
//   there, so after it a fix-up kernel zeroes them.
// - the row statistic: cuDNN's Stats is f32 [B, heads, S, 1], the natural-log logsumexp of
//   the scaled, masked scores, which is the ops' statistic; the ops store it as a pair
//   hi + lo of the 16-bit dtype, also 4 bytes a row, so attention_lse has cuDNN write the
//   f32 into its output and converts it in place, and attention_grad converts its pairs back
//   to f32 in the workspace.
// - attention_lse has no cuDNN form of its own: it runs the training forward (output and
//   statistics) with the output in the workspace, so a training step computes the forward's
//   products twice (once for attention, once for attention_lse), as it does on the own
//   kernels. attention_fwd_lse (what the static compiler's attention pass makes of the two)
//   is that training forward with both results kept: one call writes the output and the
//   statistics (converted to the pairs in place, as attention_lse's). Its statistics are
//   attention_lse's bits (the same cuDNN graph); its output is the training forward's, which
//   cuDNN does not promise to be the inference forward's (attention's) bit for bit:
//   tests/kernels/cuda_attention_cudnn_test.cpp says which holds on the device it runs on.
// - attention_grad runs cuDNN's deterministic backward (no atomics in dq): the same bits from
//   every run, which static == dynamic bitwise needs; with attention_deterministic=0 (a
//   backend option) the backward that adds dq with atomics.
//
// One cuDNN graph per key (AttnDnnKey: op, dtype, geometry, causal, the mask, alpha, and for
// attention_grad whether the backward is the deterministic one), built
// the first time the key is met and kept, with the engine cuDNN's heuristic (mode A) puts
// first: the same choice for the static executor (which asks at compile time through
// Backend::prepare, and runs in its arena's workspace) and the dynamic one (which asks per
// call and runs in a workspace this object keeps). A key cuDNN refuses (the rule of
// kernels/attention_dnn_rule.h, or the frontend's support check when its graph is built)
// runs on the own kernels from then on, in both executors; every key's choice, with the
// reason for a refusal, is listed by choices() (an attention_engine report row each).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/attention.h"
#include "kernels/op_call.h"

namespace tg::kernels {
struct CudaExecContext;
}

namespace tg::kernels::cuda {

// What fixes an attention call's cuDNN graph.
struct AttnDnnKey {
  OpKind op = OpKind::attention;
  DType dtype = DType::BF16;
  AttentionGeometry g;
  bool causal = false;
  bool masked = false;  // key lengths given (the padding mask)
  float alpha = 1.0f;
  bool deterministic = true;  // attention_grad: cuDNN's backward without atomics
  bool operator==(const AttnDnnKey& o) const;
};

// What the first call of a key settled, for reports.
struct AttnDnnChoice {
  AttnDnnKey key;
  bool cudnn = false;    // cuDNN's fused attention; false: the own kernels
  std::string engine;    // cuDNN's plan name, or "own"
  std::string why;       // why the own kernels run the key (empty when cuDNN does)
  size_t workspace = 0;  // what a call needs: cuDNN's workspace and the conversions' buffers
  double build_ms = 0;   // host time of the graph's build: what the key's first call paid
};

// One key's cuDNN graph (defined where the frontend's types are).
class AttnDnnPlan;

// The cuDNN attention state of one backend: one handle (made at the first attention call
// cuDNN may take) and the graphs by key. Thread-safe.
class AttnDnn {
 public:
  // deterministic_backward: attention_grad's keys ask for cuDNN's deterministic backward
  // (CudaBackendOptions::attention_deterministic).
  explicit AttnDnn(bool deterministic_backward = true);
  ~AttnDnn();
  AttnDnn(const AttnDnn&) = delete;
  AttnDnn& operator=(const AttnDnn&) = delete;

  // The plan of call c, or null when the call runs on the own kernels. Only the op, the
  // attributes, the shapes and the dtypes are read (the static executor prepares calls
  // without pointers). A new key's graph is built now; with warm_up, and s not capturing, it
  // also runs once on zeroed scratch, so that cuDNN's first-run work is done before a CUDA
  // Graph captures the call.
  const AttnDnnPlan* plan(const OpCall& c, cudaStream_t s, bool warm_up);
  // Enqueues c on s with plan p, in `workspace` (at least attention_dnn_workspace_bytes(p))
  // when given, else in a workspace of this object's (grown here when too small: s must not
  // be capturing then).
  void run(const AttnDnnPlan& p, const OpCall& c, void* workspace, size_t workspace_bytes, cudaStream_t s);
  // Every key's choice so far, in the order the keys were first met.
  std::vector<AttnDnnChoice> choices() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

size_t attention_dnn_workspace_bytes(const AttnDnnPlan& p);

// Runs c (an op of the attention family) through cuDNN when the context has it
// (ctx.attn_dnn) and a plan takes the call (c.prepared, else asked now); false: nothing was
// enqueued, the call is the own kernels'.
bool run_attention_dnn(const OpCall& c, const CudaExecContext& ctx);

}  // namespace tg::kernels::cuda
