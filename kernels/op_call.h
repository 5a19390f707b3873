#pragma once
// The entry layer shared by both executors: one op applied to tensors that
// already live on the backend's device. Kernels never allocate.
#include <array>
#include <cstddef>

#include "graph/attrs.h"
#include "graph/op.h"
#include "graph/shape.h"

namespace tg::kernels {

struct TensorView {
  float* data = nullptr;
  Shape shape;
};

struct OpCall {
  OpKind op = OpKind::copy;
  const Attrs* attrs = nullptr;
  std::array<TensorView, kMaxOpInputs> in{};  // op_num_inputs(op) of them are set
  int num_inputs = 0;
  TensorView out;                  // unset for update ops (sgd*), which write in[0] (and in[2])
};

}  // namespace tg::kernels
