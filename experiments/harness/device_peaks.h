#pragma once
// The dense arithmetic peak of a GPU per precision, for the "percent of peak" of the
// experiments' GEMM rows: SMs x FLOP per clock per SM x the highest SM clock the device
// reports (the report's GPU entry carries all three). The figures are those of
// tools/plot/plot_report.py's FLOP_PER_CLOCK_SM, which draws the same peaks as the plots'
// ceilings; the two tables change together.
#include <string>

#include "experiments/harness/report.h"

namespace tg::harness {

// FLOP per clock per SM of the dense (no structured sparsity) units, a fused multiply-add
// counted as 2: fp32 on the fp32 lanes, TF32, bf16 and fp16 on the Tensor Cores, from
// NVIDIA's architecture whitepapers for the A100 (8.0) and the H100/H200 (9.0). Hopper's
// four Tensor Cores per SM each do 512 dense bf16 or fp16 multiply-adds per clock (4096
// FLOP a clock per SM, twice TF32's); Ampere's half that. Only architectures whose figures
// are certain are listed: another has no peak, and its rows no percent.
struct FlopPerClockSm {
  int cc_major, cc_minor;
  double fp32, tf32, bf16, fp16;
};
inline constexpr FlopPerClockSm kFlopPerClockSm[] = {
    {8, 0, 128, 1024, 2048, 2048},
    {9, 0, 256, 2048, 4096, 4096},
};

// FLOP/s of `g` in `precision` (fp32, tf32, bf16 or fp16); 0 when unknown (an architecture
// not in the table, a precision not named there, or a GPU entry without SMs or clock).
inline double dense_peak_flops(const Metadata::Gpu& g, const std::string& precision) {
  for (const FlopPerClockSm& a : kFlopPerClockSm) {
    if (a.cc_major != g.cc_major || a.cc_minor != g.cc_minor) continue;
    const double per = precision == "fp32"   ? a.fp32
                       : precision == "tf32" ? a.tf32
                       : precision == "bf16" ? a.bf16
                       : precision == "fp16" ? a.fp16
                                             : 0.0;
    return per * g.sm_count * g.sm_clock_khz * 1e3;
  }
  return 0.0;
}

// The GPU entry of device `id` in the report's metadata; nullptr when there is none.
inline const Metadata::Gpu* gpu_entry(const Metadata& meta, int id) {
  for (const Metadata::Gpu& g : meta.gpus)
    if (g.id == id) return &g;
  return nullptr;
}

}  // namespace tg::harness
