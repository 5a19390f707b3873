// conv_cudnn.h's key text, in every CUDA build (with cuDNN or without).
#include <fmt/format.h>

#include "kernels/cuda/conv_cudnn.h"

namespace tg::kernels::cuda {

std::string conv_dnn_key_geometry(const ConvDnnKey& k) {
  const ConvGeometry& g = k.g;
  return fmt::format("n{} c{} {}x{} k{} {}x{} s{}x{} p{}x{} d{}x{} g{}{}{}{}", g.n, g.c, g.h, g.w, g.k, g.r, g.s, g.sh,
                     g.sw, g.ph, g.pw, g.dh, g.dw, g.groups, k.tf32 ? " tf32" : "",
                     k.act != Act::none ? std::string(" ") + act_name(k.act) : std::string(), g.nhwc ? " nhwc" : "");
}

}  // namespace tg::kernels::cuda
