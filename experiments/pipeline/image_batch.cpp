#include "experiments/pipeline/image_batch.h"

#include <stdexcept>
#include <utility>

namespace tg::pipeline {

namespace {
void check_shape(const ImageShape& s) {
  if (s.n < 1 || s.h < 1 || s.w < 1)
    throw std::invalid_argument("image batch: batch, height and width must be at least 1");
  if (s.c != 3)
    throw std::invalid_argument("image batch: RGB only (3 channels): ImageNet's mean and std are per RGB channel");
}
}  // namespace

const char* image_path_name(ImagePath p) { return p == ImagePath::u8 ? "u8_device_normalize" : "f32_host_normalize"; }

std::vector<uint8_t> make_image_batch(const ImageShape& s, uint64_t seed) {
  check_shape(s);
  std::vector<uint8_t> v(static_cast<size_t>(s.elems()));
  uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
  for (uint8_t& p : v) {
    x ^= x << 13;  // xorshift64, as make_raw_batch
    x ^= x >> 7;
    x ^= x << 17;
    p = static_cast<uint8_t>(x >> 56);
  }
  return v;
}

void normalize_images(const uint8_t* nhwc, float* nchw, const ImageShape& s) {
  check_shape(s);
  const int64_t plane = s.h * s.w;
  for (int64_t n = 0; n < s.n; ++n) {
    const uint8_t* in = nhwc + n * plane * s.c;
    float* out = nchw + n * plane * s.c;
    for (int64_t ch = 0; ch < s.c; ++ch)
      for (int64_t i = 0; i < plane; ++i) out[ch * plane + i] = normalize_pixel(in[i * s.c + ch], ch);
  }
}

std::vector<CopyEstimate> copy_estimates(const ImageShape& s, double gbps) {
  if (!(gbps > 0)) throw std::invalid_argument("copy estimate: the link's rate must be above 0 GB/s");
  std::vector<CopyEstimate> out;
  for (const auto& [what, size] : {std::pair<const char*, int>{"f64_sized", 8}, {"f32", 4}, {"u8", 1}}) {
    const int64_t bytes = s.elems() * size;
    out.push_back({what, size, bytes, static_cast<double>(bytes) / (gbps * 1e9)});
  }
  return out;
}

}  // namespace tg::pipeline
