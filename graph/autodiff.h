#pragma once
// Reverse-mode autodiff written only against tg::Builder, so that the static
// compiler (RecordingBuilder over a recorded graph) and the dynamic executor
// (its eager builder over this iteration's tape) share one set of gradient
// rules and issue the same ops in the same order.
#include <functional>
#include <vector>

#include "graph/builder.h"

namespace tg {

// One executed forward op. Value ids are whatever the builder that produced
// them says they are; every output id must be fresh (not an input's id, not an
// earlier output's id). An in-place relu therefore still returns a new id; the
// aliasing is a memory matter, not an identity one. Update ops have an invalid output.
struct TapeEntry {
  OpKind op = OpKind::copy;
  Attrs attrs;
  std::vector<Value> inputs;
  Value output;
};

// Which ops have a gradient rule, and for which inputs, is the op table's grad
// column (op_is_differentiable, op_has_gradient_for in graph/op.h).

// The vector-Jacobian product of one entry: given d loss / d output, returns one
// gradient per input (an invalid Value where needs[i] is false or the input has
// no gradient, e.g. cross_entropy's labels). Throws GraphError for an op that
// is not differentiable.
std::vector<Value> vjp(Builder& b, const TapeEntry& e, const Value& dout, const std::vector<bool>& needs);

// Seeds d loss = fill(loss.shape, 1) (loss must hold one element), walks the
// tape in reverse and sums gradients with add, in tape order, when a value is
// used several times. Entries that no wrt value depends on, or that do not lead
// to the loss, issue nothing. Returns one gradient per wrt value (an invalid
// Value when the loss does not depend on it). The sequence of b.apply calls is a
// deterministic function of (tape, loss, wrt): the two executors get identical ops.
// `ready`, when given, is called with (i, gradient) as soon as wrt[i]'s gradient is final (no
// entry left to walk reads wrt[i]), in the order backward produces them, so that data
// parallelism can reduce a bucket of gradients while the rest of backward runs
// (graph/data_parallel.h); a wrt value without a gradient is reported, invalid, at the end.
using GradientReady = std::function<void(size_t i, const Value& grad)>;
std::vector<Value> backward(Builder& b, const std::vector<TapeEntry>& tape, const Value& loss,
                            const std::vector<Value>& wrt, const GradientReady& ready = {});

// The graph's nodes in topological order as a tape (value ids are graph ids).
std::vector<TapeEntry> tape_from_graph(const Graph& g);

}  // namespace tg
