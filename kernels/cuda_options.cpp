#include "kernels/cuda_options.h"

namespace tg {

const std::vector<OptionField<CudaBackendOptions>>& CudaBackendOptions::fields() {
  using O = CudaBackendOptions;
  static const std::vector<OptionField<O>> f = {
      {"small_gemm", &O::small_gemm, nullptr, 0, 0, "small GEMMs on the project's one-pass kernel, not cuBLASLt"},
      {"skinny_gemm", &O::skinny_gemm, nullptr, 0, 0,
       "thin GEMMs (k or n <= 16) on the skinny kernels (with small_gemm)"},
      {"gemm_update_streamk", &O::gemm_update_streamk, nullptr, 0, 0,
       "matmul_sgd_momentum in its stream-K form; 0: the tiled kernel"},
      {"gemm_autotune", &O::gemm_autotune, nullptr, 0, 0,
       "time cuBLASLt's candidates per GEMM shape, keep the fastest (last bits may vary between runs)"},
      {"pdl", &O::pdl, nullptr, 0, 0, "programmatic dependent launch where the device has it (sm_90 and later)"},
  };
  return f;
}

CudaBackendOptions CudaBackendOptions::from_string(const std::string& text, const CudaBackendOptions& base) {
  return options_from_string(text, base, fields(), "a CUDA backend option");
}

std::string CudaBackendOptions::str() const { return options_str(*this, fields()); }

std::vector<OptionValue> CudaBackendOptions::values() const { return options_values(*this, fields()); }

std::string CudaBackendOptions::help() { return options_help(fields()); }

}  // namespace tg
