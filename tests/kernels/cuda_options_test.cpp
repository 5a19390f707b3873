// The CUDA backend's options (kernels/cuda_options.h) and their text form
// (graph/options_text.h): what TG_CUDA_OPTIONS and --cuda-options accept and refuse. CPU
// only: the parser and the defaults need no device.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

#include "kernels/cuda_options.h"
#include "tests/common/option_refusals.h"

namespace tg {

TEST_CASE("cuda options: the defaults are the measured choices, and str() reads back") {
  const CudaBackendOptions d;
  CHECK(d.small_gemm);
  CHECK(d.skinny_gemm);
  CHECK(d.gemm_update_streamk);
  CHECK_FALSE(d.gemm_autotune);
  CHECK(d.pdl);
  CHECK(d.conv_cudnn == kBuiltWithCudnn);  // on wherever the build has cuDNN
  const std::string dnn = kBuiltWithCudnn ? "1" : "0";
  CHECK_FALSE(d.conv_benchmark);   // cuDNN's heuristic: the same algorithm in every process
  CHECK(d.conv_deterministic);      // static == dynamic bitwise
  CHECK(d.attention_cudnn == kBuiltWithCudnnFrontend);  // on wherever the build has the cuDNN frontend
  CHECK(d.conv_workspace_mb == 32);  // the GEMMs' workspace
  CHECK_FALSE(d.conv_transforms);    // sums of products: the CUDA-vs-CPU tolerances assume them
  CHECK(d.conv_frontend == (kBuiltWithCudnn && kBuiltWithCudnnFrontend));  // the graph API wherever built
  CHECK(d.gemm_align_staging);       // odd-extent GEMMs padded: GPT-2's vocabulary products
  CHECK_FALSE(d.gemm_bias_grad_sums); // cuBLASLt's bias-gradient epilogue until the column sums are measured
  CHECK(d.attention_deterministic);   // static == dynamic bitwise through cuDNN's attention backward
  CHECK(d.staged_copies);             // pinned staging, the host side on the copier's threads
  const std::string fe = kBuiltWithCudnnFrontend ? "1" : "0";
  const std::string cfe = kBuiltWithCudnn && kBuiltWithCudnnFrontend ? "1" : "0";
  CHECK(d.str() == "small_gemm=1,skinny_gemm=1,gemm_update_streamk=1,gemm_autotune=0,pdl=1,conv_cudnn=" + dnn +
                       ",conv_benchmark=0,conv_deterministic=1,attention_cudnn=" + fe + ",conv_workspace_mb=32,staged_copies=1,conv_transforms=0,conv_frontend=" +
                       cfe + ",gemm_align_staging=1,gemm_bias_grad_sums=0,attention_deterministic=1");
  CHECK(CudaBackendOptions::from_string(d.str()) == d);
  CHECK(CudaBackendOptions::from_string("") == d);
  CHECK(CudaBackendOptions::from_string("   ") == d);
}

TEST_CASE("cuda options: key=value items apply over a base, in any order, spaces trimmed") {
  const CudaBackendOptions o =
      CudaBackendOptions::from_string("pdl=0, small_gemm=0 ,gemm_autotune=1,conv_cudnn=0,attention_cudnn=0,conv_frontend=0");
  CHECK_FALSE(o.pdl);
  CHECK_FALSE(o.small_gemm);
  CHECK(o.gemm_autotune);
  CHECK(o.skinny_gemm);  // not named: the base's
  CHECK_FALSE(o.conv_cudnn);
  CHECK_FALSE(o.attention_cudnn);
  CHECK(o.str() ==
        "small_gemm=0,skinny_gemm=1,gemm_update_streamk=1,gemm_autotune=1,pdl=0,conv_cudnn=0,conv_benchmark=0,"
        "conv_deterministic=1,attention_cudnn=0,conv_workspace_mb=32,staged_copies=1,conv_transforms=0,conv_frontend=0,"
        "gemm_align_staging=1,gemm_bias_grad_sums=0,attention_deterministic=1");
  // Over a base (the environment's, then the flag's): only the named keys change.
  const CudaBackendOptions flag = CudaBackendOptions::from_string("small_gemm=1", o);
  CHECK(flag.small_gemm);
  CHECK_FALSE(flag.pdl);
  CHECK(flag.gemm_autotune);
  CHECK(CudaBackendOptions::from_string(o.str()) == o);
  CHECK(o != CudaBackendOptions{});
}

TEST_CASE("cuda options: values() gives every key, in str()'s order") {
  CudaBackendOptions o;
  o.gemm_update_streamk = false;
  o.conv_cudnn = false;
  o.conv_benchmark = true;
  o.attention_cudnn = true;
  o.conv_workspace_mb = 1024;
  o.conv_frontend = false;
  const auto v = o.values();
  REQUIRE(v.size() == 16);
  CHECK(v[0].key == "small_gemm");
  CHECK(v[2].key == "gemm_update_streamk");
  CHECK(v[2].value == 0);
  CHECK(v[4].key == "pdl");
  CHECK(v[4].value == 1);
  CHECK(v[5].key == "conv_cudnn");  // reports say which convolution path ran
  CHECK(v[5].value == 0);
  CHECK(v[6].key == "conv_benchmark");  // and how its algorithms were chosen
  CHECK(v[6].value == 1);
  CHECK(v[7].key == "conv_deterministic");
  CHECK(v[7].value == 1);
  CHECK(v[8].key == "attention_cudnn");  // reports say which attention path ran
  CHECK(v[8].value == 1);
  CHECK(v[9].key == "conv_workspace_mb");  // which algorithms the convolutions could reach
  CHECK(v[9].value == 1024);
  CHECK_FALSE(v[9].is_switch);
  CHECK(v[10].key == "staged_copies");  // how the read-backs and the dynamic feeds were copied
  CHECK(v[10].value == 1);
  CHECK(v[11].key == "conv_transforms");
  CHECK(v[11].value == 0);
  CHECK(v[12].key == "conv_frontend");  // which cuDNN API chose and ran the convolutions
  CHECK(v[12].value == 0);
  CHECK(v[13].key == "gemm_align_staging");  // whether unaligned GEMMs ran padded
  CHECK(v[13].value == 1);
  CHECK(v[14].key == "gemm_bias_grad_sums");  // how 16-bit bias gradients were summed
  CHECK(v[14].value == 0);
  CHECK(v[15].key == "attention_deterministic");  // whether cuDNN's attention backward used atomics
  CHECK(v[15].value == 1);
  for (size_t i = 0; i < v.size(); ++i)
    if (i != 9) CHECK(v[i].is_switch);
  // --help lists each key with its default.
  const std::string help = CudaBackendOptions::help();
  for (const char* k : {"small_gemm=1", "skinny_gemm=1", "gemm_update_streamk=1", "gemm_autotune=0", "pdl=1",
                        "conv_benchmark=0", "conv_deterministic=1", "conv_workspace_mb=32", "staged_copies=1", "conv_transforms=0",
                        "gemm_align_staging=1", "gemm_bias_grad_sums=0", "attention_deterministic=1"})
    CHECK_MESSAGE(help.find(k) != std::string::npos, k);
  CHECK(help.find(std::string("conv_cudnn=") + (kBuiltWithCudnn ? "1" : "0")) != std::string::npos);
  CHECK(help.find(std::string("attention_cudnn=") + (kBuiltWithCudnnFrontend ? "1" : "0")) != std::string::npos);
  CHECK(help.find(std::string("conv_frontend=") + (kBuiltWithCudnn && kBuiltWithCudnnFrontend ? "1" : "0")) !=
        std::string::npos);
}

TEST_CASE("cuda options: a bad item is refused with the item named, never read as the default") {
  testing::check_option_refusals<CudaBackendOptions>({
      {"small_gemm=yes", "small_gemm='yes': expected 1 (on) or 0 (off)"},
      {"pdl=2", "pdl='2': expected 1 (on) or 0 (off)"},
      {"pdl=", "pdl='': expected 1 (on) or 0 (off)"},
      {"pdl=true", "expected 1 (on) or 0 (off)"},
      {"smal_gemm=0", "'smal_gemm' is not a CUDA backend option; the keys are small_gemm, skinny_gemm, "
                      "gemm_update_streamk, gemm_autotune, pdl, conv_cudnn, conv_benchmark, conv_deterministic, "
                      "attention_cudnn, conv_workspace_mb, staged_copies, conv_transforms, conv_frontend, gemm_align_staging, "
                      "gemm_bias_grad_sums, attention_deterministic"},
      {"small_gemm", "'small_gemm' is not key=value"},
      {"conv_workspace_mb=-1", "conv_workspace_mb='-1': expected an integer in [0, 1048576]"},
      {"conv_workspace_mb=1G", "expected an integer in [0, 1048576]"},
      {"pdl=0,pdl=1", "'pdl' is given twice"},
      {"pdl=0,,small_gemm=1", "an empty item"},
      {"pdl=0,", "an empty item"},
      {"=1", "'' is not a CUDA backend option"},
      {"lanes_early_updates=0", "is not a CUDA backend option"},  // a pass option, not this struct's
  });
}

}  // namespace tg
