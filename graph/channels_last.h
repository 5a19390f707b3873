#pragma once
// The ops whose layout channels_last changes (attrs.conv.channels_last for the conv family,
// attrs.channels_last for the batch_norm family), and which of their operands are the
// activations that become NHWC [N, H, W, C]. Weights, biases, per-channel parameters and
// running statistics keep their shapes. One definition for the channels_last pass
// (static/passes/channels_last.cpp) and the tests that compare the two layouts.
#include <cstdint>

#include "graph/op.h"

namespace tg {

struct ChannelsLastOperands {
  uint8_t inputs = 0;  // bit i: input i is an activation (x, dy, a residual)
  bool output = false;  // the output is one (else a weight's or a channel's gradient, or none)
  // Whether input i is an activation; false past the mask's bits (a variadic op's inputs).
  bool input(size_t i) const { return i < 8 && ((inputs >> i) & 1u) != 0; }
};

// The activations of op; none for an op that has no layout.
inline ChannelsLastOperands channels_last_operands(OpKind op) {
  switch (op) {
    case OpKind::conv2d:
    case OpKind::conv2d_bias_act:
    case OpKind::conv_transpose2d:
    case OpKind::max_pool2d:
    case OpKind::avg_pool2d:
    case OpKind::batch_norm:
    case OpKind::batch_norm_moments:  // y; its second output [2, C] has no layout
    case OpKind::batch_norm_inference: return {0b1, true};
    case OpKind::conv2d_bias_add_act: return {0b1001, true};  // x and the residual
    case OpKind::conv2d_grad_input: return {0b101, true};     // dy, and x for its shape
    case OpKind::max_pool2d_grad:
    case OpKind::avg_pool2d_grad:
    case OpKind::batch_norm_grad_x:
    case OpKind::batch_norm_grad: return {0b11, true};  // dx; its second output [2, C] has no layout
    case OpKind::conv2d_grad_weight:  // the output is the weight's gradient
    case OpKind::batch_norm_grad_gamma: return {0b11, false};
    case OpKind::batch_norm_grad_beta: return {0b1, false};
    case OpKind::batch_norm_stats_update: return {0b10, false};
    default: return {};
  }
}

// Whether op has a layout attribute: the conv family's is attrs.conv.channels_last, the
// batch_norm family's attrs.channels_last (batch_norm_fold, on a weight, has none).
inline bool op_has_channels_last(OpKind op) { return channels_last_operands(op).inputs != 0; }

}  // namespace tg
