#pragma once
// Out-of-memory errors shared by both executors (the dynamic allocators and the
// static plan's arena, input buffers and parameter store), so that a user sees
// one kind of message, and the experiment harness one exception type, whoever ran
// out. Every message has the same shape:
//   "<who>: out of memory on <device>: tried to allocate <bytes><note>; device free
//    <free> of total <total>; <what is held, by role>. <what to do>"
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

namespace tg {

class Backend;

// Thrown when the device cannot satisfy a request (an allocator has already
// emptied its cache and retried). what() is out_of_memory_message's text.
class OutOfMemoryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct OutOfMemoryInfo {
  std::string who;           // "caching allocator", "static plan"
  std::string device;        // Backend::name()
  size_t requested = 0;      // bytes of the request that failed
  std::string request_note;  // right after the request: " (rounded to 2.0 MiB, ...)"
  size_t device_free = 0, device_total = 0;
  std::string held;          // "allocated 1.0 GiB, reserved 1.2 GiB; by role: parameter 1.0 GiB, ..."
  std::string advice;        // "Reduce the batch or model size."
};
std::string out_of_memory_message(const OutOfMemoryInfo& info);

// backend.raw_alloc(bytes), or an OutOfMemoryError when the device refuses:
// `held` (called only then) states what the caller holds and plans, by role;
// the backend's own error text is appended to the advice.
void* raw_alloc_or_throw(Backend& backend, size_t bytes, const std::string& who,
                         const std::function<std::string()>& held, const std::string& advice);

// "1.5 MiB": for reports and error messages.
std::string format_bytes(int64_t bytes);

// The device's free and total memory (CUDA: cudaMemGetInfo; CPU: physical memory).
// A failing query gives 0 and 0 and leaves no CUDA error pending.
void device_memory_info(const Backend& backend, size_t& free_bytes, size_t& total_bytes);

}  // namespace tg
