#pragma once
// Timing a launch sequence with CUDA events: how the tuners (cuBLASLt candidates, cuDNN
// graph-API engines) measure a choice on scratch operands.
#include <cuda_runtime.h>

#include "kernels/cuda/raii.h"

namespace tg::cuda {

// Mean milliseconds of one run() on s, over `timed` runs after `warm` untimed ones (caches,
// clocks, lazy set-up). run() returns false where a run failed: then the result is -1.
template <typename Run>
double mean_run_ms(cudaStream_t s, int warm, int timed, const Run& run) {
  const Event start = Event::create(), stop = Event::create();
  for (int i = 0; i < warm + timed; ++i) {
    if (i == warm) start.record(s);
    if (!run()) return -1.0;
  }
  stop.record(s);
  stop.synchronize();
  return static_cast<double>(stop.elapsed_ms_since(start)) / timed;
}

}  // namespace tg::cuda
