// conv_cudnn.h in a build without cuDNN (cmake/Cudnn.cmake found none): no convolution runs
// through it. CudaBackend refuses conv_cudnn=1 here, so no ConvDnn is ever made.
#include <stdexcept>

#include "kernels/cuda/conv_cudnn.h"
#include "kernels/cuda/cuda_kernels.h"

namespace tg::kernels::cuda {

struct ConvDnn::Impl {};

ConvDnn::ConvDnn(size_t, ConvDnnRule) { throw std::logic_error("ConvDnn: this build has no cuDNN (cmake/Cudnn.cmake found none)"); }

ConvDnn::~ConvDnn() = default;

const ConvDnnPlan* ConvDnn::plan(const OpCall&, const ConvGeometry&, bool, cudaStream_t, bool) { return nullptr; }

void ConvDnn::run(const ConvDnnPlan&, const OpCall&, const CudaExecContext&) {
  throw std::logic_error("ConvDnn::run: this build has no cuDNN");
}

std::vector<ConvDnnChoice> ConvDnn::choices() const { return {}; }

size_t conv_dnn_workspace_bytes(const ConvDnnPlan&) { return 0; }

bool conv_dnn_geometry_ok(const ConvGeometry&) { return false; }

bool run_conv_dnn(const OpCall&, const ConvGeometry&, const CudaExecContext&) { return false; }

int cudnn_loaded_version() { return 0; }

}  // namespace tg::kernels::cuda
