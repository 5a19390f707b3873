#include "experiments/harness/report.h"

#include <fmt/format.h>
#include <unistd.h>

#include <ctime>
#include <stdexcept>
#include <thread>

#include "kernels/device_info.h"

#ifndef TWOGRAPH_VERSION
#define TWOGRAPH_VERSION "unknown"
#endif
#ifndef TWOGRAPH_GIT_REV
#define TWOGRAPH_GIT_REV "unknown"
#endif
#ifndef TWOGRAPH_BUILD_TYPE
#define TWOGRAPH_BUILD_TYPE "unknown"
#endif

namespace tg::harness {

std::string Param::str() const {
  switch (kind_) {
    case Kind::string: return s_;
    case Kind::integer: return fmt::format("{}", i_);
    case Kind::real: return fmt::format("{}", d_);
    case Kind::boolean: return b_ ? "true" : "false";
  }
  return {};
}

std::string params_str(const Params& p) {
  std::string out;
  for (const auto& [k, v] : p) {
    if (!out.empty()) out += ' ';
    out += k + '=' + v.str();
  }
  return out;
}

std::string measurement_key(const std::string& name, const Params& p) {
  // Every part length-prefixed, so no text inside a name or value can fake a boundary.
  std::string key = fmt::format("{}:{}", name.size(), name);
  for (const auto& [k, v] : p) {
    const std::string text = v.str();
    key += fmt::format("|{}:{}{}{}:{}", k.size(), k, static_cast<int>(v.kind()), text.size(), text);
  }
  return key;
}

Measurement& Report::add(Measurement m) {
  if (m.name.empty()) throw std::invalid_argument("Report::add: a measurement needs a name");
  if (m.better != "lower" && m.better != "higher")
    throw std::invalid_argument(fmt::format("Report::add({}): better must be \"lower\" or \"higher\", got \"{}\"",
                                            m.name, m.better));
  if (m.timer != "host" && m.timer != "gpu" && m.timer != "derived" && m.timer != "value")
    throw std::invalid_argument(fmt::format("Report::add({}): timer must be host, gpu, derived or value, got \"{}\"",
                                            m.name, m.timer));
  m.traced = m.traced || trace_rows;
  if (find(m.name, m.params))
    throw std::invalid_argument(fmt::format("Report::add: duplicate measurement {} [{}]: give it a distinguishing parameter",
                                            m.name, params_str(m.params)));
  try {
    m.stats = summarize(m.samples);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(fmt::format("Report::add({} [{}]): {}", m.name, params_str(m.params), e.what()));
  }
  measurements.push_back(std::move(m));
  return measurements.back();
}

Measurement& Report::add_time(std::string name, Params params, std::vector<double> samples_s, std::string timer) {
  Measurement m;
  m.name = std::move(name);
  m.params = std::move(params);
  m.samples = std::move(samples_s);
  m.timer = std::move(timer);
  return add(std::move(m));
}

Measurement& Report::add_value(std::string name, Params params, double value, std::string unit, std::string better) {
  Measurement m;
  m.name = std::move(name);
  m.params = std::move(params);
  m.samples = {value};
  m.unit = std::move(unit);
  m.better = std::move(better);
  m.timer = "value";
  return add(std::move(m));
}

void Report::skip(std::string part, std::string reason) { notes.push_back({std::move(part), std::move(reason)}); }

const Measurement* Report::find(const std::string& name, const Params& params) const {
  for (const auto& m : measurements)
    if (m.name == name && m.params == params) return &m;
  return nullptr;
}

std::string utc_now_iso8601() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Metadata collect_metadata(const std::string& tool, const std::string& command_line) {
  Metadata m;
  m.tool = tool;
  m.tool_version = TWOGRAPH_VERSION;
  m.git_rev = TWOGRAPH_GIT_REV;
  m.build_type = TWOGRAPH_BUILD_TYPE;
#ifdef TWOGRAPH_HAVE_CUDA
  m.cuda_build = true;
#endif
  m.command_line = command_line;
  m.utc_time = utc_now_iso8601();
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) == 0) m.host_name = host;
  m.cpu_model = tg::cpu_model_name();
  m.cpu_threads = static_cast<int>(std::thread::hardware_concurrency());
  m.device_name = "cpu (" + m.cpu_model + ")";
  for (const auto& g : tg::list_gpus()) {
    Metadata::Gpu o;
    o.id = g.id;
    o.name = g.name;
    o.pci_bus_id = g.pci_bus_id;
    o.sm_count = g.sm_count;
    o.cc_major = g.cc_major;
    o.cc_minor = g.cc_minor;
    o.total_bytes = g.total_bytes;
    o.free_bytes = g.free_bytes;
    o.sm_clock_khz = g.sm_clock_khz;
    o.mem_clock_khz = g.mem_clock_khz;
    o.mem_bus_width_bits = g.mem_bus_width_bits;
    o.pcie_gen = g.pcie_gen;
    o.pcie_width = g.pcie_width;
    o.l2_bytes = g.l2_bytes;
    m.gpus.push_back(std::move(o));
  }
  const auto sw = tg::software_info();
  m.cuda_runtime_version = sw.cuda_runtime_version;
  m.cuda_driver_version = sw.cuda_driver_version;
  m.cublas_version = sw.cublas_version;
  m.cudnn_version = sw.cudnn_version;
  m.openblas_config = sw.openblas_config;
  m.blas_threads = sw.cpu_threads;
  return m;
}

}  // namespace tg::harness
