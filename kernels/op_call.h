#pragma once
// The entry layer shared by both executors: one op applied to tensors that
// already live on the backend's device. Kernels never allocate.
#include <array>
#include <cstddef>

#include "graph/attrs.h"
#include "graph/op.h"
#include "graph/shape.h"

namespace tg::kernels {

// A tensor on the backend's device. `data` points at f32 elements, or, when dtype is
// bf16 or f16, at 16-bit elements (graph/float_formats.h) behind the same pointer.
struct TensorView {
  float* data = nullptr;
  Shape shape;
  DType dtype = DType::F32;
};

struct OpCall {
  OpKind op = OpKind::copy;
  const Attrs* attrs = nullptr;
  std::array<TensorView, kMaxOpInputs> in{};  // the first inputs (all of them for fixed-arity ops)
  int num_inputs = 0;
  TensorView out;                  // unset for update ops (sgd*), which write in[0] (and in[2])
  TensorView out2;                 // the second output of the fused ops that have one
  // Variadic ops (graph/op.h kVariadic) with more than kMaxOpInputs inputs: inputs
  // kMaxOpInputs.. are more[0..], in storage the caller keeps alive for the call.
  const TensorView* more = nullptr;
  // Backend state the static executor prepared for this call at compile time (the
  // cuBLASLt algorithm of a GEMM, kernels/cuda/gemm/gemm_lt.h); null: chosen at run time.
  const void* prepared = nullptr;
  // Workspace for the call (the static executor's, in its arena); null: the backend's own.
  void* workspace = nullptr;
  size_t workspace_bytes = 0;

  const TensorView& input(int i) const {
    return i < kMaxOpInputs ? in[static_cast<size_t>(i)] : more[i - kMaxOpInputs];
  }
};

}  // namespace tg::kernels
