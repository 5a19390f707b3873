#pragma once
// What the harness and the reports say about the machine. Compiled in every build:
// without CUDA (or without a device) the lists are empty and the CPU is described alone.
#include <cstdint>
#include <string>
#include <vector>

namespace tg {

struct GpuInfo {
  int id = -1;                 // CUDA device ordinal (after CUDA_VISIBLE_DEVICES)
  std::string name;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  uint64_t total_bytes = 0, free_bytes = 0;
  int sm_clock_khz = 0, mem_clock_khz = 0, mem_bus_width_bits = 0;
  int pcie_gen = 0, pcie_width = 0;  // 0 when the driver does not say (NVML is optional)
  std::string pci_bus_id;
  size_t l2_bytes = 0;
};

struct SoftwareInfo {
  int cuda_runtime_version = 0;  // 13000 for 13.0; 0 without CUDA
  int cuda_driver_version = 0;
  int cublas_version = 0;
  int cudnn_version = 0;         // the cuDNN loaded (cudnnGetVersion()); 0 in a build without cuDNN
  std::string openblas_config;   // openblas_get_config()
  int cpu_threads = 0;           // BLAS threads
};

// Every visible GPU; empty without CUDA or without a device (never throws for "no device").
std::vector<GpuInfo> list_gpus();
SoftwareInfo software_info();
std::string cpu_model_name();   // from /proc/cpuinfo

// Resolves --device: "cpu" -> -1; "auto" -> the GPU with the most free memory,
// or -1 (the CPU backend) when there is none; "N" -> N if it exists. Anything
// else, or an N that does not exist, throws std::invalid_argument with a message
// that lists the valid choices (never a silent fallback to GPU 0).
int resolve_device(const std::string& spec);

}  // namespace tg
