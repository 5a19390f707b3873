#pragma once
// The frontend's own check of a key's cuDNN attention graph (attention_cudnn.h) for a target
// compute capability, without a device: the graph is built as AttnDnn builds it and validated
// (shapes, strides, dtypes and the SDPA support surface the frontend knows for that target).
// What needs the device and the library's engines (the heuristic, the plans) is not checked.
// A test can thus catch a malformed graph on a machine without a GPU.
#include <string>

#include "kernels/cuda/attention_cudnn.h"

namespace tg::kernels::cuda {

// Empty when the frontend accepts key k's graph for compute capability sm_version (90 for
// sm_90); else the frontend's code and message. A build without the frontend says so.
std::string attention_dnn_check_graph(const AttnDnnKey& k, int sm_version);

}  // namespace tg::kernels::cuda
