// attention_cudnn.h in a build without the cuDNN frontend (cmake/CudnnFrontend.cmake found
// none): every attention call runs on the own kernels. CudaBackend refuses attention_cudnn=1
// here, so no AttnDnn is ever made.
#include <stdexcept>
#include <string>

#include "kernels/cuda/attention_cudnn.h"
#include "kernels/cuda/attention_cudnn_graph.h"
#include "kernels/cuda/cuda_kernels.h"

namespace tg::kernels::cuda {

struct AttnDnn::Impl {};

AttnDnn::AttnDnn(bool) {
  throw std::logic_error("AttnDnn: this build has no cuDNN frontend (cmake/CudnnFrontend.cmake found none)");
}

AttnDnn::~AttnDnn() = default;

const AttnDnnPlan* AttnDnn::plan(const OpCall&, cudaStream_t, bool) { return nullptr; }

void AttnDnn::run(const AttnDnnPlan&, const OpCall&, void*, size_t, cudaStream_t) {
  throw std::logic_error("AttnDnn::run: this build has no cuDNN frontend");
}

std::vector<AttnDnnChoice> AttnDnn::choices() const { return {}; }

size_t attention_dnn_workspace_bytes(const AttnDnnPlan&) { return 0; }

bool run_attention_dnn(const OpCall&, const CudaExecContext&) { return false; }

std::string attention_dnn_check_graph(const AttnDnnKey&, int) {
  return "this build has no cuDNN frontend (cmake/CudnnFrontend.cmake found none)";
}

}  // namespace tg::kernels::cuda
