// The context-memory child (context_memory.h). Compiled only when TWOGRAPH_HAVE_CUDA.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "experiments/harness/cold_start.h"
#include "experiments/harness/output.h"
#include "experiments/memory/context_memory.h"
#include "experiments/memory/first_kernel.h"
#include "experiments/memory/nvml.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/raii.h"
#ifdef TWOGRAPH_HAVE_CUDNN
#include "kernels/cuda/cudnn_handles.h"
#endif

namespace tg::memory {

namespace {

// The loading mode the driver runs (CUDA_MODULE_LOADING, or its default when unset), asked
// through the runtime's driver entry point as kernels/cuda/check.cpp does, so that nothing
// links libcuda. Neither this nor the calls before the first step create a context.
std::string module_loading_in_effect() {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  TG_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuModuleGetLoadingMode", &fn, 12000, cudaEnableDefault, &q));
  if (q != cudaDriverEntryPointSuccess || !fn) return "unknown";
  CUmoduleLoadingMode mode{};
  TG_CU_CHECK(reinterpret_cast<CUresult (*)(CUmoduleLoadingMode*)>(fn)(&mode));
  return mode == CU_MODULE_LAZY_LOADING ? "lazy" : "eager";
}

// Reads NVML (and cudaMemGetInfo once the context exists) after each step.
class Reader {
 public:
  Reader(const Nvml& nvml, Nvml::Device device, ContextChildOutput& out)
      : nvml_(nvml), device_(device), out_(out), pid_(static_cast<unsigned>(::getpid())) {}
  void context_created() { context_ = true; }
  void read(const char* step) {
    ContextSnapshot s;
    s.step = step;
    s.device_used = static_cast<int64_t>(nvml_.memory(device_).used);
    const Nvml::ProcessMemory p = nvml_.process_memory(device_, pid_);
    if (p.state == Nvml::ProcessMemory::State::listed) s.process_used = static_cast<int64_t>(p.bytes);
    if (p.state == Nvml::ProcessMemory::State::unavailable && !said_unavailable_) {
      out_.notes.emplace_back("context_memory nvml_process", p.why);
      said_unavailable_ = true;
    }
    if (context_) {  // before it, cudaMemGetInfo would create the context it is to measure
      size_t free = 0, total = 0;
      TG_CUDA_CHECK(cudaMemGetInfo(&free, &total));
      s.meminfo_used = static_cast<int64_t>(total - free);
    }
    out_.snapshots.push_back(std::move(s));
  }

 private:
  const Nvml& nvml_;
  Nvml::Device device_;
  ContextChildOutput& out_;
  unsigned pid_;
  bool context_ = false, said_unavailable_ = false;
};

// The readings, with NVML up; CUDA errors throw, as everywhere.
ContextChildOutput take_readings(const Nvml& nvml, int device) {
  ContextChildOutput out;
  const ModuleLoadingEnv env = parse_module_loading_env(std::getenv("CUDA_MODULE_LOADING"));
  int count = 0;
  TG_CUDA_CHECK(cudaGetDeviceCount(&count));
  if (device >= count)
    throw std::invalid_argument(fmt::format("device {} does not exist: this process sees {} CUDA device(s)", device,
                                            count));
  char bus_id[64] = {};
  TG_CUDA_CHECK(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device));
  const Nvml::Device nvml_device = nvml.device_by_pci_bus_id(bus_id);
  const std::string mode = module_loading_in_effect();
  out.settings = {{"module_loading", mode}, {"module_loading_env", env.text}};
  if (mode == "unknown")
    out.notes.emplace_back("module_loading", "the driver gives no cuModuleGetLoadingMode: the loading mode is unknown");
  else if (!env.requested.empty() && env.requested != mode)
    out.notes.emplace_back("module_loading", fmt::format("CUDA_MODULE_LOADING={} asks for {} loading, the driver "
                                                         "reports {}", env.text, env.requested, mode));
#ifndef TWOGRAPH_HAVE_CUDNN
  out.notes.emplace_back("context_memory step=cudnn_handle",
                         "this build links no cuDNN (its convolutions are the project's own kernels): there is no "
                         "cuDNN handle to measure");
#endif

  Reader reader(nvml, nvml_device, out);
  reader.read("before_context");
  // Since CUDA 12 cudaSetDevice creates the primary context; before, the first call that
  // needs one did (cudaFree(0) is the customary one). Both, as the cold-start rows time it.
  TG_CUDA_CHECK(cudaSetDevice(device));
  TG_CUDA_CHECK(cudaFree(nullptr));
  reader.context_created();
  reader.read("context");
  launch_first_kernel();
  reader.read("first_kernel");
  const cuda::CublasHandle cublas = cuda::CublasHandle::create();
  reader.read("cublas_handle");
  const cuda::CublasLtHandle lt = cuda::CublasLtHandle::create();
  reader.read("cublaslt_handle");
  const cuda::DeviceBuffer workspace = cuda::DeviceBuffer::allocate(CudaBackend::kCublasWorkspaceBytes);
  reader.read("cublas_workspace");
#ifdef TWOGRAPH_HAVE_CUDNN
  // What the backend's convolutions add (kernels/cuda/conv_cudnn.cpp makes one handle): cuDNN
  // loads its kernels' modules into the context when its handle is made.
  const cuda::CudnnHandle dnn = cuda::CudnnHandle::create();
  reader.read("cudnn_handle");
#endif
  return out;
}

// An NVML that is missing, or that fails on this device (a virtual GPU, a partition it does not
// report), skips the rows with its reason rather than failing the whole of tg-memory: the
// measurement needs NVML, the rest of the run does not.
ContextChildOutput measure(int device) {
  ContextChildOutput skipped;
  try {
    const Nvml nvml;
    return take_readings(nvml, device);
  } catch (const Nvml::Unavailable& e) {
    skipped.skip_reason = e.what();
  } catch (const Nvml::Error& e) {
    skipped.skip_reason = fmt::format("NVML cannot read device {}: {}", device, e.what());
  }
  return skipped;
}

}  // namespace

std::optional<int> context_memory_child(int argc, char** argv) {
  const std::optional<int> device = harness::child_mode_device(argc, argv, kContextMemoryChildFlag);
  if (!device) return std::nullopt;
  if (*device < 0) return 2;
  const std::string who = fmt::format("{} {} {}", argv[0], kContextMemoryChildFlag, *device);
  try {
    const std::string text = format_context_output(measure(*device));
    // The parent reads a pipe: a write that failed must not pass as a run that measured nothing.
    if (std::fputs(text.c_str(), stdout) < 0 || std::fflush(stdout) != 0) {
      harness::say(who, fmt::format("cannot write the readings to stdout: {}", std::strerror(errno)));
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    harness::say(who, e.what());
    return 1;
  }
}

}  // namespace tg::memory
