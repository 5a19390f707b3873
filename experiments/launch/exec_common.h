#pragma once
// What tg-launch and tg-train share: the backend for --device, feeds for a
// model's inputs, a bitwise comparison and the CUDA stream for event timing.
#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "graph/init.h"
#include "graph/models.h"
#include "kernels/backend.h"
#include "static/executable.h"
#ifdef TWOGRAPH_HAVE_CUDA
#include "kernels/cuda/cuda_backend.h"
#endif

namespace tg::bench {

// device: the harness's resolved ordinal, -1 for the CPU backend.
inline std::shared_ptr<Backend> make_backend(int device) {
#ifdef TWOGRAPH_HAVE_CUDA
  if (device >= 0) return std::shared_ptr<Backend>(make_cuda_backend(device));
#endif
  if (device >= 0) throw std::logic_error("a GPU was selected but this build has no CUDA backend");
  return std::shared_ptr<Backend>(make_cpu_backend());
}

// The stream the backend enqueues on (for CUDA events); nullptr on the CPU.
inline void* stream_of(Backend& b) {
#ifdef TWOGRAPH_HAVE_CUDA
  if (b.kind() == DeviceKind::cuda) return static_cast<CudaBackend&>(b).stream();
#endif
  (void)b;
  return nullptr;
}

// Random feeds for every input the model declares (recorded once to learn the
// shapes); "labels" gets class indices in [0, classes).
inline Feeds model_feeds(const ModelFn& model, uint64_t seed, int64_t classes = 0) {
  Graph g;
  {
    RecordingBuilder rb(g);
    model(rb);
  }
  Feeds f;
  uint64_t salt = 0;
  for (int id : g.values_with_role(Role::input)) {
    const ValueInfo& v = g.values[static_cast<size_t>(id)];
    std::vector<float> data(static_cast<size_t>(v.shape.numel()));
    if (v.name == "labels") random_labels(data, seed + salt++, classes);
    else random_fill(data, seed + salt++);
    f[v.name] = std::move(data);
  }
  return f;
}

// "" when a and b hold the same bits; else the size difference or the first mismatches.
inline std::string bitwise_diff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return fmt::format("sizes differ: {} vs {}", a.size(), b.size());
  std::string out;
  int shown = 0;
  for (size_t i = 0; i < a.size() && shown < 5; ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) {
      out += fmt::format("[{}] {:.9g} != {:.9g}; ", i, a[i], b[i]);
      ++shown;
    }
  }
  return out;
}

}  // namespace tg::bench
