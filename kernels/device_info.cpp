// kernels/device_info.h. Built in every configuration: with TWOGRAPH_HAVE_CUDA it is
// compiled into tg_kernels_cuda (it needs cudart), otherwise into tg_kernels_cpu,
// where the GPU list is empty (kernels/CMakeLists.txt picks the library).
//
// The PCIe link comes from NVML, opened with dlopen at run time, so nothing links
// libnvidia-ml and a machine without the driver still runs: the link is then 0.
// The few NVML entry points are declared here (their C ABI has been stable since
// NVML 3), so no NVML header is needed at build time either.
#include "kernels/device_info.h"

#include <cblas.h>
#include <fmt/format.h>

#include <cctype>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "graph/quote.h"

#ifdef TWOGRAPH_HAVE_CUDA
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "kernels/cuda/conv_cudnn.h"
#include <dlfcn.h>
#endif

namespace tg {

namespace {

#ifdef TWOGRAPH_HAVE_CUDA
struct Nvml {
  using Dev = void*;
  using InitFn = int (*)();
  using ByBusFn = int (*)(const char*, Dev*);
  using UintFn = int (*)(Dev, unsigned*);
  void* lib = nullptr;
  InitFn init = nullptr, shutdown = nullptr;
  ByBusFn by_bus = nullptr;
  UintFn max_gen = nullptr, max_width = nullptr, cur_gen = nullptr, cur_width = nullptr;

  Nvml() {
    lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    init = reinterpret_cast<InitFn>(dlsym(lib, "nvmlInit_v2"));
    shutdown = reinterpret_cast<InitFn>(dlsym(lib, "nvmlShutdown"));
    by_bus = reinterpret_cast<ByBusFn>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    max_gen = reinterpret_cast<UintFn>(dlsym(lib, "nvmlDeviceGetMaxPcieLinkGeneration"));
    max_width = reinterpret_cast<UintFn>(dlsym(lib, "nvmlDeviceGetMaxPcieLinkWidth"));
    cur_gen = reinterpret_cast<UintFn>(dlsym(lib, "nvmlDeviceGetCurrPcieLinkGeneration"));
    cur_width = reinterpret_cast<UintFn>(dlsym(lib, "nvmlDeviceGetCurrPcieLinkWidth"));
    if (!init || !shutdown || !by_bus || init() != 0) {
      dlclose(lib);
      lib = nullptr;
    }
  }
  ~Nvml() {
    if (lib) {
      shutdown();
      dlclose(lib);
    }
  }
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  // The link the device and the slot can run at (an idle GPU trains its current
  // link down, which says nothing about the transfer rate under load).
  void pcie(const std::string& bus_id, int& gen, int& width) const {
    Dev d = nullptr;
    if (!lib || by_bus(bus_id.c_str(), &d) != 0) return;
    unsigned g = 0, w = 0;
    if (max_gen && max_gen(d, &g) == 0) gen = static_cast<int>(g);
    else if (cur_gen && cur_gen(d, &g) == 0) gen = static_cast<int>(g);
    if (max_width && max_width(d, &w) == 0) width = static_cast<int>(w);
    else if (cur_width && cur_width(d, &w) == 0) width = static_cast<int>(w);
  }
};

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // "no device" / "no driver" is an answer here, not an error
    return 0;
  }
  return n;
}

int attr(cudaDeviceAttr a, int dev) {
  int v = 0;
  if (cudaDeviceGetAttribute(&v, a, dev) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return v;
}
#endif

std::string valid_choices(int count) {
  if (count == 0) return "cpu, auto (no CUDA device is visible to this program)";
  return count == 1 ? "cpu, auto, 0" : fmt::format("cpu, auto, 0..{}", count - 1);
}

}  // namespace

std::vector<GpuInfo> list_gpus() {
  std::vector<GpuInfo> out;
#ifdef TWOGRAPH_HAVE_CUDA
  const int n = device_count();
  if (n == 0) return out;
  int prev = 0;
  if (cudaGetDevice(&prev) != cudaSuccess) cudaGetLastError();
  const Nvml nvml;
  for (int d = 0; d < n; ++d) {
    GpuInfo g;
    g.id = d;
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, d) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    g.name = p.name;
    g.sm_count = p.multiProcessorCount;
    g.cc_major = p.major;
    g.cc_minor = p.minor;
    g.total_bytes = p.totalGlobalMem;
    g.l2_bytes = static_cast<size_t>(p.l2CacheSize);
    g.mem_bus_width_bits = p.memoryBusWidth;
    g.sm_clock_khz = attr(cudaDevAttrClockRate, d);
    g.mem_clock_khz = attr(cudaDevAttrMemoryClockRate, d);
    char bus[32] = {0};
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, d) == cudaSuccess) g.pci_bus_id = bus;
    else cudaGetLastError();
    // Free memory needs a context on the device (created once, kept by the runtime).
    size_t free_b = 0, total_b = 0;
    if (cudaSetDevice(d) == cudaSuccess && cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) {
      g.free_bytes = free_b;
    } else {
      cudaGetLastError();
    }
    nvml.pcie(g.pci_bus_id, g.pcie_gen, g.pcie_width);
    out.push_back(std::move(g));
  }
  if (cudaSetDevice(prev) != cudaSuccess) cudaGetLastError();
#endif
  return out;
}

SoftwareInfo software_info() {
  SoftwareInfo s;
#ifdef TWOGRAPH_HAVE_CUDA
  if (cudaRuntimeGetVersion(&s.cuda_runtime_version) != cudaSuccess) cudaGetLastError();
  if (cudaDriverGetVersion(&s.cuda_driver_version) != cudaSuccess) cudaGetLastError();
  int major = 0, minor = 0, patch = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS)
    s.cublas_version = major * 10000 + minor * 100 + patch;  // the encoding of CUBLAS_VERSION
  s.cudnn_version = kernels::cuda::cudnn_loaded_version();
#endif
  const char* cfg = openblas_get_config();
  s.openblas_config = cfg ? cfg : "";
  s.cpu_threads = openblas_get_num_threads();
  if (s.cpu_threads <= 0) s.cpu_threads = static_cast<int>(std::thread::hardware_concurrency());
  return s;
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const auto p = line.find(':');
      if (p != std::string::npos) {
        const auto b = line.find_first_not_of(' ', p + 1);
        return b == std::string::npos ? std::string("unknown CPU") : line.substr(b);
      }
    }
  return "unknown CPU";
}

int resolve_device(const std::string& spec) {
  if (spec == "cpu") return -1;
#ifdef TWOGRAPH_HAVE_CUDA
  const int count = device_count();
#else
  const int count = 0;
#endif
  if (spec == "auto") {
    if (count == 0) return -1;
    int best = 0;
    uint64_t best_free = 0;
    for (const GpuInfo& g : list_gpus())
      if (g.free_bytes > best_free) {
        best_free = g.free_bytes;
        best = g.id;
      }
    return best;
  }
  bool digits = !spec.empty() && spec.size() <= 6;
  for (char ch : spec) digits = digits && std::isdigit(static_cast<unsigned char>(ch));
  if (!digits)
    throw std::invalid_argument(fmt::format("--device {} is not a device: valid choices are {}", quote_name(spec),
                                            valid_choices(count)));
  const int id = std::stoi(spec);
  if (id >= count)
    throw std::invalid_argument(fmt::format("--device {}: there is no CUDA device {} (CUDA_VISIBLE_DEVICES applies); "
                                            "valid choices are {}", spec, id, valid_choices(count)));
  return id;
}

}  // namespace tg
