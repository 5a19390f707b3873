// The backend for a device the harness resolved (kernels/device_info.h): the one
// place that knows which backends this build has.
#include <fmt/format.h>

#include <stdexcept>

#include "kernels/attention_engines.h"
#include "kernels/backend.h"
#include "kernels/conv_algorithms.h"
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

std::vector<ConvAlgorithm> conv_algorithms(const Backend& b) {
  std::vector<ConvAlgorithm> out;
#ifdef TWOGRAPH_HAVE_CUDA
  if (b.kind() != DeviceKind::cuda) return out;
  for (const kernels::cuda::ConvDnnChoice& c : static_cast<const CudaBackend&>(b).conv_choices()) {
    ConvAlgorithm a;
    a.op = op_name(c.key.op);
    a.dtype = dtype_name(c.key.dtype);
    a.geometry = kernels::cuda::conv_dnn_key_geometry(c.key);
    a.algo = c.algo;
    a.benchmarked = c.benchmarked;
    a.deterministic = c.deterministic;
    a.workspace_bytes = static_cast<int64_t>(c.workspace);
    a.choose_ms = c.choose_ms;
    a.algo_ms = c.algo_ms;
    a.offers = c.offers;
    a.passed_nondeterministic = c.passed_nondeterministic;
    a.passed_transform = c.passed_transform;
    a.passed_workspace = c.passed_workspace;
    a.passed_workspace_least = static_cast<int64_t>(c.passed_workspace_least);
    out.push_back(std::move(a));
  }
#else
  (void)b;
#endif
  return out;
}

std::vector<AttentionEngine> attention_engines(const Backend& b) {
  std::vector<AttentionEngine> out;
#ifdef TWOGRAPH_HAVE_CUDA
  if (b.kind() != DeviceKind::cuda) return out;
  for (const kernels::cuda::AttnDnnChoice& c : static_cast<const CudaBackend&>(b).attention_choices()) {
    const AttentionGeometry& g = c.key.g;
    AttentionEngine a;
    a.op = op_name(c.key.op);
    a.dtype = dtype_name(c.key.dtype);
    a.geometry = fmt::format("b{} h{} s{} d{}{}{}", g.batch, g.heads, g.seq, g.dh, c.key.causal ? " causal" : "",
                             c.key.masked ? " key_lengths" : "");
    a.engine = c.engine;
    a.why = c.why;
    a.workspace_bytes = static_cast<int64_t>(c.workspace);
    a.build_ms = c.build_ms;
    out.push_back(std::move(a));
  }
#else
  (void)b;
#endif
  return out;
}

}  // namespace tg
