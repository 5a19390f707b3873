#pragma once
// Host f32 values to and from a device tensor of any dtype: rounded on the host on the way
// in, widened on the way out (graph/float_formats.h). The executors' feeds, read-backs and
// initial values go through these.
#include <cstdint>
#include <vector>

#include "graph/shape.h"
#include "kernels/backend.h"

namespace tg {

void copy_to_device_as(Backend& be, void* dst, const std::vector<float>& host, DType dt);
std::vector<float> copy_to_host_from(Backend& be, const void* src, int64_t n, DType dt);

// copy_to_host_from into a vector the caller keeps from step to step: `out` is resized to n
// (a vector already of that size keeps its pages: no allocation, no zero fill, no page
// faults) and `staging` holds a 16-bit tensor's bytes before they are widened, grown only
// when a larger one comes. Large 16-bit tensors are widened on several threads.
void copy_to_host_into(Backend& be, const void* src, int64_t n, DType dt, std::vector<float>& out,
                       std::vector<unsigned char>& staging);

// load_from_dtype split over up to `threads` threads from kParallelWidenElements elements on
// (below that, on the caller alone).
inline constexpr size_t kParallelWidenElements = size_t{1} << 22;
void load_from_dtype_parallel(const void* src, size_t n, DType dt, float* dst, int threads);

}  // namespace tg
