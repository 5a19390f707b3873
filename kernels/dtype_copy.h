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

}  // namespace tg
