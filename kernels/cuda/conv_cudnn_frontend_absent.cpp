// conv_cudnn_frontend.h in a build without the cuDNN frontend: every key runs on the legacy
// API. CudaBackend refuses conv_frontend=1 here, so conv_fe_build is never asked.
#include "kernels/cuda/conv_cudnn_frontend.h"

#include <stdexcept>

namespace tg::kernels::cuda {

struct ConvFePlan {};

ConvFeBuilt conv_fe_build(cudnnContext*, const ConvDnnKey&, const ConvDnnRule&, size_t, const ConvFeScratch*) {
  ConvFeBuilt r;
  r.why = "this build has no cuDNN frontend";
  return r;
}

void conv_fe_run(cudnnContext*, const ConvFePlan&, const void*, const void*, void*, void*) {
  throw std::logic_error("conv_fe_run: this build has no cuDNN frontend");
}

std::string conv_fe_check_graph(const ConvDnnKey&, int) { return "this build has no cuDNN frontend"; }

}  // namespace tg::kernels::cuda
