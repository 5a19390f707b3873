#pragma once
// The graph passes of the static compiler: rewrites of the training (or inference)
// graph between autodiff and memory planning, each a pure function Graph -> Graph that
// keeps the graph's meaning and fuses ops into fewer kernels. What each one buys is
// measured in tg-train and tg-kernels (docs/compiler.md).
//
// Every pass keeps the names of the values it does not remove (inputs, parameters,
// the loss and the prediction, every graph output), so feeds and reads by name, the
// parameter store and the executors' comparisons work on a rewritten graph too. A pass
// never fuses away a value that is a graph output or that another node still reads.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "graph/options_text.h"
#include "kernels/gemm/gemm_staging.h"

namespace tg {

// In pipeline order: run_passes applies the selected ones in this order.
enum class PassId : uint8_t {
  bn_fold,  // inference batch norm folded into the convolution before it (weights and a bias, at run time)
  conv,     // a convolution's bias, residual add and ReLU in its epilogue: one conv2d_bias(_add)_act
  heads,   // attention's products on the linear layers' layout: no head split or merge transposes
  attention,  // a layer's attention and attention_lse: one forward that keeps its row statistic (attention_fwd_lse)
  rows,    // scale into softmax (and its gradient), the layernorm parameter gradients into one op,
           // a layernorm input gradient added into the residual stream's inside its kernel, a
           // layernorm's output cast to bf16/f16 on its store, a batch norm's three
           // gradients into one op, and its running statistics updated from its batch moments
  linear,  // matmul + bias (+ ReLU/GELU), residual adds and accumulated gradients, weight + bias gradients: one GEMM
  elementwise,  // chains of elementwise ops: one fused_elementwise kernel per chain
  optimizer,    // every sgd / sgd_momentum / adamw update of the step: one multi-tensor update
  low_copies,   // a weight's per-step cast to bf16/f16 becomes a persistent copy its update writes
  vocab_pad,    // a language model head's unaligned vocabulary padded in the graph: no per-call GEMM copies
  lanes,        // no rewrite: the weight gradients and updates marked to run on a second stream
  channels_last,  // a CNN's convolutions, pools and batch norms on NHWC activations; an option, not in all()
};
constexpr int kNumPasses = 12;
const char* pass_name(PassId p);

class PassSet {
 public:
  static PassSet none() { return PassSet(0); }
  // Every pass but the layout option (channels_last), which changes what the kernels read
  // rather than fusing anything, and whose gain depends on the device and the library (docs/cnn.md).
  static PassSet all() { return PassSet(((1u << kNumPasses) - 1) & ~bit(PassId::channels_last)); }
  static PassSet only(PassId p) { return PassSet(bit(p)); }
  bool has(PassId p) const { return (bits_ >> static_cast<unsigned>(p)) & 1u; }
  bool empty() const { return bits_ == 0; }
  PassSet with(PassId p) const { return PassSet(bits_ | (1u << static_cast<unsigned>(p))); }
  bool operator==(const PassSet& o) const { return bits_ == o.bits_; }
  // "none", "all", or the names in pipeline order joined by ','.
  std::string str() const;
  bool contains(const PassSet& o) const { return (bits_ & o.bits_) == o.bits_; }
  PassSet operator|(const PassSet& o) const { return PassSet(bits_ | o.bits_); }

 private:
  explicit PassSet(uint32_t bits) : bits_(bits) {}
  static uint32_t bit(PassId p) { return 1u << static_cast<unsigned>(p); }
  uint32_t bits_;
};

// "none", "all", or a comma-separated list of pass names (any order; each once), where
// "all" may be one of the words ("all,rows" is all; "all,channels_last" adds the layout option).
// Throws std::invalid_argument naming the bad word and listing the passes.
PassSet parse_passes(const std::string& text);

// The passes' choices: what a pass does beyond its place in PassSet. Given to compile in
// CompileOptions::pass_options, handed to each pass (run_passes) and to the scheduling that
// follows them, and copied into the compiled plan (CompiledPlan::pass_options), so that a
// report row says what its plan was compiled with. Every default is the choice the
// measurements favour (docs/compiler.md); the others are for A/B runs and tests.
inline constexpr int64_t kGemmUpdateMinTiles = 512;
inline constexpr int64_t kEarlyUpdateBytes = int64_t{4} << 20;
struct PassOptions : TextOptions<PassOptions> {
  // The optimizer pass computes a large weight's gradient inside its update
  // (matmul_sgd_momentum) when the gradient is a weight-gradient GEMM of at least
  // gemm_update_min_tiles tiles of 128 x 128 that nothing else reads (optimizer.cpp).
  bool gemm_updates = true;
  // Enough tiles to fill the GPU; tests of small weights lower it.
  int64_t gemm_update_min_tiles = kGemmUpdateMinTiles;
  // With the lanes pass, the optimizer pass keeps the update of each weight gradient of
  // kEarlyUpdateBytes or more apart, beside the GEMM that made it, and the compiler moves
  // side nodes up (hoist_side_nodes), so that a large model's updates run on the side
  // stream while the main stream computes the input gradients of the layers below.
  bool lanes_early_updates = true;
  // The lanes pass may put GEMM updates (matmul_sgd_momentum) on the side stream. Off by
  // default: the backend's stream-K form of them (CudaBackendOptions::gemm_update_streamk,
  // the default) makes the step slower beside the input-gradient GEMMs (lanes.cpp says
  // why); the tiled form gains from it, which is why it stays a choice.
  bool lanes_side_gemm_updates = false;
  // The elementwise pass takes float casts into its chains (a bf16 GEMM's output cast to
  // f32 and added to the residual: one kernel). Off, every cast ends a chain: for A/B
  // runs, and to take the casts out of a backend's fused kernels.
  bool elementwise_casts = true;
  // Not an option: whether the backend computes GEMMs of unaligned extents at padded ones
  // (Backend::pads_unaligned_gemms), set by compile. The vocab_pad pass pads only then, so
  // that the plan's products are the ones the dynamic executor's calls compute.
  bool backend_pads_gemms = true;
  // Not an option: the smallest product the pass pads, the backend's (kernels/gemm/gemm_staging.h
  // kStagingMinProduct, 2^30 multiply-adds); tests of small graphs lower it.
  int64_t vocab_pad_min_product = kernels::kStagingMinProduct;

  static constexpr const char* kKind = "a pass option";
  static const std::vector<OptionField<PassOptions>>& fields();
  // The threshold the optimizer pass fuses GEMM updates from: 0 (none) when they are off.
  int64_t gemm_update_threshold() const { return gemm_updates ? gemm_update_min_tiles : 0; }
};

// What one pass did, for reports: nodes before and after, and its time.
struct PassStats {
  PassId pass;
  int nodes_before = 0, nodes_after = 0;
  double ms = 0;
};

// Applies the passes of `set` in pipeline order, each with `opt`.
Graph run_passes(Graph g, PassSet set, const PassOptions& opt = {}, std::vector<PassStats>* stats = nullptr);

// The passes one by one (pure functions; see each file).
Graph pass_bn_fold(const Graph& g);  // static/passes/conv.cpp
Graph pass_conv(const Graph& g);     // static/passes/conv.cpp
Graph pass_heads(const Graph& g);   // static/passes/heads.cpp
Graph pass_attention(const Graph& g);  // static/passes/attention.cpp
Graph pass_rows(const Graph& g);    // static/passes/rows.cpp
Graph pass_linear(const Graph& g);  // static/passes/linear.cpp
Graph pass_elementwise(const Graph& g, const PassOptions& opt = {});  // static/passes/elementwise.cpp
// The optimizer pass with opt's GEMM updates; split_bytes > 0: the updates whose parameter
// has at least split_bytes bytes grouped by the node that made their gradient (one multi
// update per weight-gradient GEMM) instead of all together (run_passes gives
// kEarlyUpdateBytes with the lanes pass and opt.lanes_early_updates).
// (static/passes/optimizer.cpp)
Graph pass_optimizer(const Graph& g, const PassOptions& opt = {}, int64_t split_bytes = 0);
// The same with the GEMM updates' threshold in tiles given (0: none fused).
Graph pass_optimizer(const Graph& g, int64_t split_bytes, int64_t gemm_min_tiles);
// The low_copies pass (static/passes/low_copies.cpp): every `cast` of a parameter to bf16 or
// f16 whose parameter one sgd / sgd_momentum / adamw update (or its multi form) writes
// becomes a persistent optimizer-state copy that the update (now its *_multi_cast form)
// writes right after the parameter, rounded as `cast` rounds: the next step reads the bits
// the cast would have made, without the cast. The parameter store fills each copy from its
// parameter when it is bound and after every write from outside the step (parameter_store.h).
Graph pass_low_copies(const Graph& g);
// The vocab_pad pass (static/passes/vocab_pad.cpp): an output layer's GEMMs over a vocabulary
// whose rows are not whole 16-byte steps, with 16-bit weight copies (low_copies), at padded
// extents: the copy, the logits and their gradient padded, the classes given to
// cross_entropy (attrs.size), the weight gradient a view of the padded one's first rows.
// Only where the backend would pad each product per call (opt.backend_pads_gemms).
Graph pass_vocab_pad(const Graph& g, const PassOptions& opt = {});
// The channels_last pass (static/passes/channels_last.cpp): the spatial ops of a CNN on NHWC
// activations, transposes where a value meets an op that reads NCHW; a graph without 4-D
// convolutions, pools or batch norms is returned as it is.
Graph pass_channels_last(const Graph& g);
// Of a *_multi_cast update (op_update_writes_copy): (parameter, copy) value ids, per group.
std::vector<std::pair<int, int>> weight_copies_of(const Node& update);
// Whether value v is a persistent low-precision copy that an update of g writes.
bool is_weight_copy(const Graph& g, int v);
// The lanes pass (static/passes/lanes.cpp): per node id, whether it may run on the side
// stream when the nodes run in the order `schedule`. The graph is left as it is.
std::vector<bool> side_lane_nodes(const Graph& g, const std::vector<int>& schedule, const PassOptions& opt = {});
// The schedule with every side node moved up to just after the last main node it waits
// for (its inputs' producers; for an update, every earlier reader of what it writes),
// side nodes keeping their order: so a side node starts as soon as it can, not where the
// topological order happened to put it. Still a topological order that keeps every
// reader of a parameter before its update, so a serial run gives the same bits.
std::vector<int> hoist_side_nodes(const Graph& g, const std::vector<int>& schedule, const std::vector<bool>& side);

}  // namespace tg
