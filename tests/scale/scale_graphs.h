#pragma once
// Graphs of 100k nodes for the scale tests: a forward graph written as the file that
// `tg-graph print --training` reads, and the size every test of the suite runs at.
#include <fmt/format.h>

#include <string>

#include "graph/builder.h"

namespace tg::testing {

// Optimized builds run the full size: there a step that grows with the square of the
// graph takes minutes, past the tests' TIMEOUT. Unoptimized and sanitizer builds, which
// check other things, run a fifth of it.
#if defined(NDEBUG) && !defined(__SANITIZE_ADDRESS__)
constexpr int kScaleNodes = 100000;
#else
constexpr int kScaleNodes = 20000;
#endif

struct ChainOptions {
  int nodes = kScaleNodes;
  int64_t width = 8;
  bool block_outputs = false;  // each block's pre-activation is a graph output too
};

// Blocks of matmul, bias_add, gelu, scale, mul, add (a residual) and layernorm, each
// block with parameters of its own, then an mse loss: about opt.nodes nodes. The forward
// of a deep network, with every pattern the graph passes fuse.
inline Graph block_chain(const ChainOptions& opt = {}) {
  constexpr int kBlockNodes = 7;
  Graph g;
  RecordingBuilder b(g);
  const Shape rows{4, opt.width}, row{opt.width};
  Value h = b.input("x", rows);
  const Value target = b.input("target", rows);
  for (int i = 0; (i + 1) * kBlockNodes < opt.nodes; ++i) {
    const std::string p = fmt::format("b{}.", i);
    auto op = [&](OpKind k, std::vector<Value> ins, const char* name, Attrs at = {}) {
      return b.apply(k, ins, at, p + name);
    };
    const Value z = op(OpKind::matmul, {h, b.parameter(p + "w", {opt.width, opt.width})}, "mm");
    const Value zb = op(OpKind::bias_add, {z, b.parameter(p + "bias", row)}, "zb");
    if (opt.block_outputs) b.mark_output(zb);
    Attrs half;
    half.alpha = 0.5f;
    const Value s = op(OpKind::scale, {op(OpKind::gelu, {zb}, "act")}, "half", half);
    const Value r = op(OpKind::add, {op(OpKind::mul, {s, h}, "gate"), h}, "res");
    h = op(OpKind::layernorm, {r, b.parameter(p + "gamma", row, ParamInit{ParamInit::Kind::constant, 1.0f}),
                               b.parameter(p + "beta", row, ParamInit{ParamInit::Kind::constant, 0.0f})}, "ln");
  }
  b.mark_output(b.apply(OpKind::mse_loss, {h, target}, {}, "loss"));
  b.mark_output(h);
  return g;
}

}  // namespace tg::testing
