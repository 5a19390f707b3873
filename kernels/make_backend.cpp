// The backend for a device the harness resolved (kernels/device_info.h): the one
// place that knows which backends this build has.
#include <stdexcept>

#include "kernels/backend.h"
#ifdef TWOGRAPH_HAVE_CUDA
#include "kernels/cuda/cuda_backend.h"
#endif

namespace tg {

std::shared_ptr<Backend> make_backend(int device, const CudaBackendOptions& cuda, bool tf32) {
#ifdef TWOGRAPH_HAVE_CUDA
  if (device >= 0) return std::shared_ptr<Backend>(make_cuda_backend(device, tf32, cuda));
#else
  (void)cuda;
  (void)tf32;
#endif
  if (device >= 0) throw std::logic_error("a GPU was selected but this build has no CUDA backend");
  return std::shared_ptr<Backend>(make_cpu_backend());
}

void* backend_stream(Backend& b) {
#ifdef TWOGRAPH_HAVE_CUDA
  if (b.kind() == DeviceKind::cuda) return static_cast<CudaBackend&>(b).stream();
#endif
  (void)b;
  return nullptr;
}

}  // namespace tg
