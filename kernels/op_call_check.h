#pragma once
// The checks every backend's entry (run_cpu, run_cuda) makes before it launches:
// arity, null pointers, attrs, element counts, axes, permutations and the aliasing
// an op cannot survive. Cheap integer checks only: both executors pass every op
// through them and the dynamic executor is timed on them. One implementation, so a
// call the CPU backend accepts is exactly a call the CUDA backend accepts.
#include <cstdint>

#include "graph/batch_norm.h"
#include "graph/conv.h"
#include "kernels/op_call.h"

namespace tg::kernels {

// The sizes the launchers need, resolved by the check.
struct CallGeometry {
  int64_t n = 0;                          // elements of input 0 (of the output for fill)
  int64_t rows = 0, cols = 0;             // row ops: rows x the last dim
  int64_t outer = 0, len = 0, inner = 0;  // reduce: [outer, len, inner]; broadcast: len = size;
                                          // concat: len = the output's extent; slice: len = size;
                                          // embedding(_grad): rows = ids, cols = dim, len = vocabulary;
                                          // cross_entropy(_grad): len = the classes (attrs.size or cols)
  int axis = 0;                           // concat, slice: attrs.axis, normalized
  ConvGeometry conv;                      // the conv family (graph/conv.h); n: output elements
  BatchNormGeometry bn;                   // the batchnorm family (graph/batch_norm.h)
};

// Throws std::invalid_argument "<backend> <op>: <what is wrong>[; <how to fix it>]",
// for the shapes, the buffers and the dtypes (the op table's dtype column).
CallGeometry check_op_call(const OpCall& c, const char* backend);

// Whether every view of the call is f32 (the kernels' own dtype; the CPU backend runs
// the others through f32, graph/float_formats.h), not counting the ids and labels, which
// the kernels read in their own dtype.
bool call_is_f32(const OpCall& c);
// Whether the call moves integer values (a layout op or a cast over i32 or i64 data).
bool call_has_ints(const OpCall& c);
// The dtype a call computes in, as Backend::runs takes it: its first input's, or its output's
// when it has no inputs.
DType call_dtype(const OpCall& c);

}  // namespace tg::kernels
