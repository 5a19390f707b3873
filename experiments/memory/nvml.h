#pragma once
// NVML, the driver's management library (what nvidia-smi reads), loaded at run time. It reads
// a device's used memory, and each process's, without creating a CUDA context: that is how
// the context's own memory is measured (context_memory.h). Loaded with dlopen rather than
// linked, so that the build and CI (no driver) need no NVML; where it cannot be loaded the
// caller skips, with Unavailable's reason.
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

namespace tg::memory {

class Nvml {
 public:
  static constexpr const char* kLibrary = "libnvidia-ml.so.1";

  // The library cannot be loaded, lacks a function, or nvmlInit_v2 failed: a reason to
  // skip (no driver on this machine), not a failed measurement.
  struct Unavailable : std::runtime_error {
    using std::runtime_error::runtime_error;
  };
  // An NVML call failed once the library was up; the message names the call and
  // nvmlErrorString's text.
  struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
  };

  struct Memory {
    uint64_t total = 0, free = 0, used = 0;
  };
  // One process's device memory as NVML lists it.
  struct ProcessMemory {
    enum class State { listed, not_listed, unavailable };
    State state = State::not_listed;
    uint64_t bytes = 0;  // when listed
    std::string why;     // when unavailable: what NVML said
  };
  using Device = struct nvmlDevice_st*;  // NVML's opaque nvmlDevice_t

  // dlopen(library) and nvmlInit_v2; throws Unavailable naming the library and why.
  explicit Nvml(const char* library = kLibrary);
  ~Nvml();  // nvmlShutdown, then dlclose
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  // The device of a PCI bus id as cudaDeviceGetPCIBusId writes it ("0000:3B:00.0"): NVML's
  // indices follow the PCI order, CUDA's ordinals CUDA_DEVICE_ORDER and CUDA_VISIBLE_DEVICES,
  // so only the bus id names the same device in both.
  Device device_by_pci_bus_id(const std::string& bus_id) const;
  Memory memory(Device d) const;  // nvmlDeviceGetMemoryInfo: the whole device
  // nvmlDeviceGetComputeRunningProcesses_v3's usedGpuMemory for `pid`. not_listed: the
  // process has no context on the device (or, in a container with its own PID namespace,
  // NVML lists host PIDs: the caller cannot tell, and falls back). unavailable: NVML does
  // not give the figure (no permission, not supported, NVML_VALUE_NOT_AVAILABLE).
  ProcessMemory process_memory(Device d, unsigned pid) const;

 private:
  struct Api;
  struct LibraryCloser {
    void operator()(void* handle) const noexcept;
  };
  std::unique_ptr<void, LibraryCloser> library_;
  std::unique_ptr<Api> api_;
  void check(int result, const char* call) const;
};

}  // namespace tg::memory
