// device_peaks.h: the dense peaks of the experiments' "percent of peak", and the same
// figures as the plots' ceilings (tools/plot/plot_report.py's FLOP_PER_CLOCK_SM).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "experiments/harness/device_peaks.h"

namespace th = tg::harness;

namespace {

th::Metadata::Gpu gpu(int major, int minor, int sms, int clock_khz) {
  th::Metadata::Gpu g;
  g.id = 0;
  g.cc_major = major;
  g.cc_minor = minor;
  g.sm_count = sms;
  g.sm_clock_khz = clock_khz;
  return g;
}

}  // namespace

TEST_CASE("dense peaks: SMs x FLOP per clock per SM x the SM clock in each precision") {
  const th::Metadata::Gpu h200 = gpu(9, 0, 132, 1980000);
  CHECK(th::dense_peak_flops(h200, "fp32") == doctest::Approx(132.0 * 256 * 1.98e9));
  CHECK(th::dense_peak_flops(h200, "tf32") == doctest::Approx(132.0 * 2048 * 1.98e9));
  CHECK(th::dense_peak_flops(h200, "bf16") == doctest::Approx(132.0 * 4096 * 1.98e9));
  CHECK(th::dense_peak_flops(h200, "fp16") == doctest::Approx(th::dense_peak_flops(h200, "bf16")));
  CHECK(th::dense_peak_flops(gpu(8, 0, 108, 1410000), "bf16") == doctest::Approx(108.0 * 2048 * 1.41e9));
  // Unknown: an architecture not in the table, a precision it does not name, no clock.
  CHECK(th::dense_peak_flops(gpu(8, 9, 128, 2520000), "bf16") == 0.0);
  CHECK(th::dense_peak_flops(h200, "fp8") == 0.0);
  CHECK(th::dense_peak_flops(gpu(9, 0, 132, 0), "bf16") == 0.0);
}

TEST_CASE("dense peaks: the GPU entry of a device by its id") {
  th::Metadata meta;
  meta.gpus = {gpu(9, 0, 132, 1980000), gpu(8, 0, 108, 1410000)};
  meta.gpus[1].id = 3;
  REQUIRE(th::gpu_entry(meta, 3) != nullptr);
  CHECK(th::gpu_entry(meta, 3)->cc_major == 8);
  CHECK(th::gpu_entry(meta, 1) == nullptr);
}

TEST_CASE("dense peaks: the same per-SM figures as the plots' ceilings") {
  std::ifstream in(TG_PLOT_REPORT_PY);
  REQUIRE_MESSAGE(in.good(), "cannot read " TG_PLOT_REPORT_PY);
  std::stringstream text;
  text << in.rdbuf();
  const std::string py = text.str();
  for (const th::FlopPerClockSm& a : th::kFlopPerClockSm) {
    const std::string entry = fmt::format(
        R"("{}.{}": \{{"fp32": {:g}, "tf32": {:g}, "bf16": {:g}, "fp16": {:g}\}})", a.cc_major, a.cc_minor, a.fp32,
        a.tf32, a.bf16, a.fp16);
    CHECK_MESSAGE(std::regex_search(py, std::regex(entry)),
                  "tools/plot/plot_report.py's FLOP_PER_CLOCK_SM has no entry " << entry);
  }
}
