#pragma once
// Dropout with a counter-based generator, the same bits in both executors, on every device
// and on every CUDA-graph replay.
//
// Every dropout of a model reads one rng state: the training state kRngStateName, i64 [2],
// the seed then the offset. It starts at (the executor's seed modulo 2^24, 0)
// (ParamInit::Kind::seed): the seed option of tg-train, CompileOptions and DynamicOptions
// seeds the masks as it seeds the weights. The mask of a dropout node is a pure function of
// (seed, offset, the node's rng_stream, the element's index) through Philox4x32-10
// (kernels/philox.h), so it depends on neither the dtype, the executor nor the device, and
// the gradient (the same dropout of dy) draws it again instead of storing it.
//
// A training step ends with rng_advance, which adds 1 to the offset on the device, so the
// next step draws fresh masks; a CUDA-graph replay advances its own state, with no host
// copy (the state is persistent, as the parameters are). Both trainers append it after the
// optimizer updates (advance_rng), when the model made the state.
//
// Eval mode (Builder::eval: build_inference_graph, the dynamic executor's inference) makes
// dropout the identity: no node, no rng state. Attention-probability dropout, inside the
// fused attention kernel, is not supported.
#include <cstdint>

#include "graph/builder.h"

namespace tg {

constexpr const char* kRngStateName = "rng";

// The model's rng state, made on first use.
Value rng_state(Builder& b);

// x with each element zeroed with probability p, the rest scaled by 1 / (1 - p); x itself in
// eval mode or for p = 0. Give every dropout of a model its own rng_stream (0, 1, 2, ...):
// two with the same stream over tensors of one size would drop the same elements.
Value dropout(Builder& b, Value x, float p, int64_t rng_stream);

// The end of a training step: the rng state's offset advanced (rng_advance), when `rng` is
// valid (the model made the state).
void advance_rng(Builder& b, const Value& rng);

}  // namespace tg
