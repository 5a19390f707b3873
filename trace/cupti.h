#pragma once
// GPU spans from CUPTI's activity records (CUDA builds only): kernels, copies and
// memsets on their device and stream, the CUDA runtime calls on the host lane of the
// thread that made them, and a flow from each launching call to what it launched.
// CUPTI takes its timestamps from trace::now_ns(), so host and GPU share one clock.
// Activity follows the trace's window: records are on while it records.
#include <cstddef>
#include <string>

namespace tg::trace {

// Starts collecting for the active trace on CUDA device `device`, shown as
// `device_name`. Returns "" when collecting, else why not (CUPTI refused: another
// profiler holds it, say); the run goes on without GPU spans either way.
std::string start_gpu_activity(int device, const std::string& device_name);
// Waits for the device, flushes CUPTI's buffers, stops collecting and adds the GPU
// events and flows to the trace. Call before trace::to_json. Returns the records CUPTI
// dropped (its buffers were full); 0 when not started.
size_t stop_gpu_activity();

}  // namespace tg::trace
