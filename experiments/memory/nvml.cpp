#include "experiments/memory/nvml.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdio>
#include <type_traits>
#include <vector>

namespace tg::memory {

namespace {

// The few NVML types used here, as nvml.h declares them (its ABI is stable: these
// layouts are versioned by the _v2/_v3 suffixes of the functions that take them). The
// header is not included so that a toolkit without it still builds.
using Result = int;  // nvmlReturn_t
constexpr Result kSuccess = 0, kNotSupported = 3, kNoPermission = 4, kInsufficientSize = 7;
constexpr unsigned long long kValueNotAvailable = ~0ULL;  // NVML_VALUE_NOT_AVAILABLE
struct MemoryV1 {                                          // nvmlMemory_t
  unsigned long long total, free, used;
};
struct ProcessInfoV2 {  // nvmlProcessInfo_t, what nvmlDeviceGetComputeRunningProcesses_v3 fills
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
};

}  // namespace

struct Nvml::Api {
  Result (*init)() = nullptr;
  Result (*shutdown)() = nullptr;
  const char* (*error_string)(Result) = nullptr;
  Result (*by_pci_bus_id)(const char*, Device*) = nullptr;
  Result (*memory_info)(Device, MemoryV1*) = nullptr;
  Result (*compute_processes)(Device, unsigned int*, ProcessInfoV2*) = nullptr;
};

void Nvml::LibraryCloser::operator()(void* handle) const noexcept {
  if (handle && dlclose(handle) != 0) std::fprintf(stderr, "twograph: warning: dlclose(NVML): %s\n", dlerror());
}

Nvml::Nvml(const char* library) : api_(std::make_unique<Api>()) {
  library_.reset(dlopen(library, RTLD_NOW | RTLD_LOCAL));
  if (!library_) {
    const char* why = dlerror();
    throw Unavailable(fmt::format("cannot load {} ({}): NVML is installed with the NVIDIA driver; where a GPU is "
                                  "present, the driver's libraries are not on the loader's path",
                                  library, why ? why : "no reason given"));
  }
  auto resolve = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(library_.get(), name));
    if (!fn) throw Unavailable(fmt::format("{} has no {}: the driver is older than this program needs", library, name));
  };
  resolve(api_->init, "nvmlInit_v2");
  resolve(api_->shutdown, "nvmlShutdown");
  resolve(api_->error_string, "nvmlErrorString");
  resolve(api_->by_pci_bus_id, "nvmlDeviceGetHandleByPciBusId_v2");
  resolve(api_->memory_info, "nvmlDeviceGetMemoryInfo");
  resolve(api_->compute_processes, "nvmlDeviceGetComputeRunningProcesses_v3");
  const Result r = api_->init();
  if (r != kSuccess)
    throw Unavailable(fmt::format("nvmlInit_v2 failed: {} (NVML error {})", api_->error_string(r), r));
}

Nvml::~Nvml() {
  const Result r = api_->shutdown();
  if (r != kSuccess)
    std::fprintf(stderr, "twograph: warning: nvmlShutdown failed: %s (NVML error %d)\n", api_->error_string(r), r);
}

void Nvml::check(int result, const char* call) const {
  if (result != kSuccess)
    throw Error(fmt::format("{} failed: {} (NVML error {})", call, api_->error_string(result), result));
}

Nvml::Device Nvml::device_by_pci_bus_id(const std::string& bus_id) const {
  Device d = nullptr;
  const std::string call = fmt::format("nvmlDeviceGetHandleByPciBusId_v2(\"{}\")", bus_id);
  check(api_->by_pci_bus_id(bus_id.c_str(), &d), call.c_str());
  return d;
}

Nvml::Memory Nvml::memory(Device d) const {
  MemoryV1 m{};
  check(api_->memory_info(d, &m), "nvmlDeviceGetMemoryInfo");
  return {m.total, m.free, m.used};
}

Nvml::ProcessMemory Nvml::process_memory(Device d, unsigned pid) const {
  // Processes may start between the call that counts them and the call that lists them:
  // ask again, with room for a few more, until the list fits.
  std::vector<ProcessInfoV2> infos;
  for (int attempt = 0;; ++attempt) {
    unsigned int count = static_cast<unsigned int>(infos.size());
    const Result r = api_->compute_processes(d, &count, infos.empty() ? nullptr : infos.data());
    if (r == kSuccess) {
      infos.resize(count);
      break;
    }
    if (r == kInsufficientSize && attempt < 8) {
      infos.resize(count + 8);
      continue;
    }
    if (r == kNoPermission || r == kNotSupported)
      return {ProcessMemory::State::unavailable, 0,
              fmt::format("nvmlDeviceGetComputeRunningProcesses_v3: {}", api_->error_string(r))};
    check(r, "nvmlDeviceGetComputeRunningProcesses_v3");
  }
  for (const ProcessInfoV2& p : infos) {
    if (p.pid != pid) continue;
    if (p.usedGpuMemory == kValueNotAvailable)
      return {ProcessMemory::State::unavailable, 0,
              "nvmlDeviceGetComputeRunningProcesses_v3 lists this process without its usedGpuMemory "
              "(NVML_VALUE_NOT_AVAILABLE)"};
    return {ProcessMemory::State::listed, p.usedGpuMemory, {}};
  }
  return {};
}

}  // namespace tg::memory
