// kernels/out_of_memory.h. Needs cudart in CUDA builds (cudaMemGetInfo), so
// kernels/CMakeLists.txt compiles it into tg_kernels_cuda there, as device_info.cpp.
#include "kernels/out_of_memory.h"

#include <fmt/format.h>
#include <unistd.h>

#include "kernels/backend.h"

#ifdef TWOGRAPH_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace tg {

std::string out_of_memory_message(const OutOfMemoryInfo& i) {
  return fmt::format("{}: out of memory on {}: tried to allocate {}{}; device free {} of total {}; {}. {}", i.who,
                     i.device, format_bytes(static_cast<int64_t>(i.requested)), i.request_note,
                     format_bytes(static_cast<int64_t>(i.device_free)),
                     format_bytes(static_cast<int64_t>(i.device_total)), i.held, i.advice);
}

void* raw_alloc_or_throw(Backend& backend, size_t bytes, const std::string& who,
                         const std::function<std::string()>& held, const std::string& advice) {
  try {
    return backend.raw_alloc(bytes);
  } catch (const std::exception& e) {
    OutOfMemoryInfo info;
    info.who = who;
    info.device = backend.name();
    info.requested = bytes;
    device_memory_info(backend, info.device_free, info.device_total);
    info.held = held ? held() : std::string("(no breakdown)");
    info.advice = fmt::format("{} ({})", advice, e.what());
    throw OutOfMemoryError(out_of_memory_message(info));
  }
}

std::string format_bytes(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes < 0) return "-" + format_bytes(-bytes);
  if (bytes < 1024) return fmt::format("{} B", bytes);
  if (bytes < (int64_t{1} << 20)) return fmt::format("{:.1f} KiB", b / 1024.0);
  if (bytes < (int64_t{1} << 30)) return fmt::format("{:.1f} MiB", b / (1024.0 * 1024.0));
  return fmt::format("{:.2f} GiB", b / (1024.0 * 1024.0 * 1024.0));
}

void device_memory_info(const Backend& backend, size_t& free_bytes, size_t& total_bytes) {
  free_bytes = total_bytes = 0;
#ifdef TWOGRAPH_HAVE_CUDA
  if (backend.kind() == DeviceKind::cuda) {
    // The backend made its device current; a failure here only blanks the report.
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
      cudaGetLastError();
      free_bytes = total_bytes = 0;
    }
    return;
  }
#endif
  (void)backend;
  const long page = sysconf(_SC_PAGESIZE);
  const long avail = sysconf(_SC_AVPHYS_PAGES), phys = sysconf(_SC_PHYS_PAGES);
  if (page > 0 && avail > 0 && phys > 0) {
    free_bytes = static_cast<size_t>(avail) * static_cast<size_t>(page);
    total_bytes = static_cast<size_t>(phys) * static_cast<size_t>(page);
  }
}

}  // namespace tg
