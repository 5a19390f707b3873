#pragma once
// Node attributes. One plain struct for every op: each op reads the fields it
// documents in op.h and validation rejects values that make no sense for it.
#include <array>
#include <initializer_list>
#include <string>

#include "graph/ew_program.h"
#include "graph/shape.h"

namespace tg {

// The activation a fused GEMM applies to its result (linear).
enum class Act : uint8_t { none, relu, gelu };
const char* act_name(Act a);
bool parse_act(const std::string& s, Act& out);

// matmul_heads: which operands are "head views". A head view is a [B, S, heads * d]
// tensor seen as B * heads matrices [S, d], matrix b * heads + h starting at b*S*heads*d +
// h*d with leading dimension heads * d: the layout a linear layer writes and attention's
// split into heads would transpose away.
struct HeadView {
  int64_t count = 0;               // heads; 0: not set
  bool a = false, b = false, out = false;
  bool operator==(const HeadView& o) const { return count == o.count && a == o.a && b == o.b && out == o.out; }
};

// conv2d, its backward ops and the pools: the window's geometry over the two spatial dims
// (H, W) of an NCHW tensor (NHWC with channels_last), as ONNX's Conv and MaxPool attributes give it. pads are
// {top, left, bottom, right} (ONNX's begin-then-end order). conv2d takes its window
// from the weight's shape, so `kernel` is the pools' only.
struct ConvAttr {
  std::array<int, 2> kernel{{0, 0}};
  std::array<int, 2> stride{{1, 1}};
  std::array<int, 4> pads{{0, 0, 0, 0}};
  std::array<int, 2> dilation{{1, 1}};
  int groups = 1;
  bool ceil_mode = false;  // pools: the output extent rounds up (a last, partial window)
  // conv_transpose2d: rows and columns added at the end (bottom, right) of the output, which
  // its extent alone cannot say (strides > 1 map several output extents onto one input's).
  std::array<int, 2> output_padding{{0, 0}};
  // The activations (x, dy, the output, a residual) are NHWC [N, H, W, C]; the weight stays
  // [K, C/groups, R, S] (docs/cnn.md, "Layout"). Set by the channels_last pass.
  bool channels_last = false;
  bool operator==(const ConvAttr& o) const {
    return kernel == o.kernel && stride == o.stride && pads == o.pads && dilation == o.dilation &&
           groups == o.groups && ceil_mode == o.ceil_mode && output_padding == o.output_padding &&
           channels_last == o.channels_last;
  }
};

// adamw and adamw_multi: torch.optim.AdamW's hyperparameters, with its defaults (lr is
// Attrs::lr). weight_decay is decoupled: the parameter shrinks by lr * weight_decay.
struct AdamAttr {
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.01f;
  bool operator==(const AdamAttr& o) const {
    return beta1 == o.beta1 && beta2 == o.beta2 && eps == o.eps && weight_decay == o.weight_decay;
  }
};

// transpose's axis order: output dim d is input dim perm[d]. The entries past the input's
// rank hold their own index (a graph file lists only the first rank entries, and the loader
// and Builder's transpose restore the rest so), which keeps two equal orders equal.
using Perm = std::array<int, kMaxRank>;
constexpr Perm identity_perm() {
  Perm p{};
  for (int i = 0; i < kMaxRank; ++i) p[static_cast<size_t>(i)] = i;
  return p;
}
// The given leading entries, the identity past them: perm_of({1, 0}) swaps a matrix.
inline Perm perm_of(std::initializer_list<int> lead) {
  Perm p = identity_perm();
  size_t i = 0;
  for (int a : lead) p[i++] = a;
  return p;
}

struct Attrs {
  bool trans_a = false;            // matmul: use A^T
  bool trans_b = false;            // matmul: use B^T
  int axis = -1;                   // reduce_*, broadcast, softmax (last only)
  int64_t size = 0;                // broadcast: extent of the inserted axis; slice: extent taken;
                                   // cross_entropy(_grad): the classes, the logits' first size columns (0: all)
  int64_t start = 0;               // slice: the first index taken along attrs.axis
  float eps = 1e-5f;               // layernorm
  float alpha = 1.0f;              // scale factor
  float value = 0.0f;              // fill value
  float lr = 0.01f;                // sgd, sgd_momentum
  float momentum = 0.9f;           // sgd_momentum
  bool in_place = false;           // relu (and elementwise ops): write into input 0
  Shape shape;                     // reshape target (one dim may be -1), fill shape
  Perm perm = identity_perm();     // transpose
  Act act = Act::none;             // linear: the activation of the GEMM's epilogue
  EwProgram program;               // fused_elementwise: the chain it runs (graph/ew_program.h)
  HeadView heads;                  // matmul_heads: the head count and which operands are head views
  DType to = DType::F32;           // cast: the output's dtype
  ConvAttr conv;                   // conv2d and the pools: stride, pads, dilation, groups, window
  float growth_factor = 2.0f;      // update_scale: the scale's factor after growth_interval clean steps
  float backoff_factor = 0.5f;     // update_scale: the scale's factor after a step with an inf or a nan
  int64_t growth_interval = 2000;  // update_scale: clean steps in a row before the scale grows
  AdamAttr adam;                   // adamw: betas, eps, weight decay
  float max_norm = 1.0f;           // clip_by_norm: the global norm the gradients are clipped to
  bool causal = false;             // attention: query i sees keys 0..i only
  int64_t ignore_index = -100;     // cross_entropy(_grad): rows with this label count nowhere (torch's default)
  float p = 0.0f;                  // dropout: the probability of zeroing an element, in [0, 1)
  int64_t rng_stream = 0;          // dropout: which of the rng state's streams draws the mask (one per node)
  bool channels_last = false;      // batch_norm family: x is [N, ..., C], the channel axis last (else [N, C, ...])

  bool operator==(const Attrs& o) const;
};

// cross_entropy(_grad) over logits of `columns` columns: how many of them are classes. The
// vocab_pad pass pads the logits and keeps the real classes, the first attrs.size columns.
inline int64_t cross_entropy_classes(const Attrs& at, int64_t columns) { return at.size > 0 ? at.size : columns; }

// The fields of Attrs by name, for the op table (graph/op.h: which op reads which) and
// the graph-file format (graph/json_load.cpp and json_save.cpp: the key of each). A field added to Attrs
// gets an id here, its key in attr_name() and a column in the op table.
enum class AttrId : uint8_t { trans_a, trans_b, axis, size, eps, alpha, value, lr, momentum, in_place, shape, perm, act,
                             program, heads, to, conv, start, growth_factor, backoff_factor, growth_interval, adam,
                             max_norm, causal, ignore_index, p, rng_stream, channels_last };
constexpr int kNumAttrs = 28;
static_assert(static_cast<int>(AttrId::channels_last) + 1 == kNumAttrs, "kNumAttrs counts AttrId");
using AttrMask = uint32_t;
static_assert(kNumAttrs <= 32, "AttrMask holds one bit per attribute");
constexpr AttrMask attr_bit(AttrId a) { return static_cast<AttrMask>(1u << static_cast<unsigned>(a)); }
// The graph-file key of an attribute ("trans_a", ...).
const char* attr_name(AttrId a);

}  // namespace tg
