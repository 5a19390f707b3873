// Used ONLY while kernels/ has no implementation of kernels/device_info.h yet (the
// CMake check in this folder decides): it describes the CPU alone, as a CPU-only
// build would, so the harness links and its tests run. Once kernels/ defines
// tg::resolve_device this file drops out of the build by itself.
#include <fstream>
#include <stdexcept>
#include <thread>

#include "kernels/device_info.h"

namespace tg {

std::vector<GpuInfo> list_gpus() { return {}; }

SoftwareInfo software_info() {
  SoftwareInfo s;
  s.cpu_threads = static_cast<int>(std::thread::hardware_concurrency());
  return s;
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      auto p = line.find(':');
      if (p != std::string::npos) return line.substr(line.find_first_not_of(' ', p + 1));
    }
  return "unknown CPU";
}

int resolve_device(const std::string& spec) {
  if (spec == "cpu" || spec == "auto") return -1;
  throw std::invalid_argument("'" + spec + "' is not a device here: valid choices are cpu and auto "
                              "(no CUDA device is visible to this build)");
}

}  // namespace tg
