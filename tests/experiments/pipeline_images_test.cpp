// tg-pipeline's image batches on the host: the CPU reference of the normalization against
// values worked out by hand (torchvision's ToTensor + Normalize with ImageNet's statistics),
// the NHWC -> NCHW layout, and the bytes a batch puts on the link (the seed's 8 bytes an
// element against float32's 4 and uint8's 1).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "experiments/pipeline/image_batch.h"

namespace tg {

using pipeline::ImageShape;

TEST_CASE("tg-pipeline images: normalize_images gives ToTensor + Normalize's values, NHWC in, NCHW out") {
  const ImageShape s{2, 2, 3, 3};  // 2 images of 2 x 3 pixels
  std::vector<uint8_t> px(static_cast<size_t>(s.elems()));
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>(i * 7);
  px[0] = 0;     // image 0, pixel (0, 0), red
  px[1] = 255;   // green
  px[2] = 128;   // blue
  std::vector<float> out(px.size(), std::nanf(""));
  pipeline::normalize_images(px.data(), out.data(), s);
  const int64_t plane = s.h * s.w;
  // (0 - 0.485) / 0.229, (1 - 0.456) / 0.224, (128/255 - 0.406) / 0.225, to float's precision.
  CHECK(out[0] == doctest::Approx(-2.117904).epsilon(1e-6));
  CHECK(out[static_cast<size_t>(plane)] == doctest::Approx(2.428571).epsilon(1e-6));
  CHECK(out[static_cast<size_t>(2 * plane)] == doctest::Approx(0.426492).epsilon(1e-5));
  // Every element: channel-major per image, each from its NHWC pixel.
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t c = 0; c < s.c; ++c)
      for (int64_t i = 0; i < plane; ++i) {
        const uint8_t x = px[static_cast<size_t>((n * plane + i) * s.c + c)];
        const double want = (x / 255.0 - pipeline::kImageNetMean[c]) / pipeline::kImageNetStd[c];
        CHECK(out[static_cast<size_t>((n * s.c + c) * plane + i)] == doctest::Approx(want).epsilon(1e-6));
      }
}

TEST_CASE("tg-pipeline images: a batch other than RGB, or empty, is refused") {
  std::vector<uint8_t> px(16);
  std::vector<float> out(16);
  CHECK_THROWS_AS(pipeline::normalize_images(px.data(), out.data(), ImageShape{1, 2, 2, 4}), std::invalid_argument);
  CHECK_THROWS_AS(pipeline::make_image_batch(ImageShape{0, 2, 2, 3}, 1), std::invalid_argument);
  CHECK(pipeline::make_image_batch(ImageShape{1, 2, 2, 3}, 1) == pipeline::make_image_batch(ImageShape{1, 2, 2, 3}, 1));
}

TEST_CASE("tg-pipeline images: the seed's batch is 4,816,896 elements, and 8 bytes each is float64's size, not float32's") {
  const ImageShape seed;  // (32, 224, 224, 3)
  CHECK(seed.elems() == 4816896);
  const auto e = pipeline::copy_estimates(seed, pipeline::kSeedPcieGBps);
  REQUIRE(e.size() == 3);
  CHECK(std::string(e[0].what) == "f64_sized");
  CHECK(e[0].bytes == 38535168);  // 32 * 224 * 224 * 3 * 8: the seed's figure
  CHECK(std::string(e[1].what) == "f32");
  CHECK(e[1].bytes == 19267584);  // what the network's f32 input holds
  CHECK(std::string(e[2].what) == "u8");
  CHECK(e[2].bytes == 4816896);   // what the decoded images hold
  // At PCIe 3.0 x16's 15.75 GB/s: 2.45 ms as the seed counts, 1.22 ms in f32, 0.306 ms in uint8.
  CHECK(e[0].seconds == doctest::Approx(2.4467e-3).epsilon(1e-3));
  CHECK(e[1].seconds == doctest::Approx(1.2233e-3).epsilon(1e-3));
  CHECK(e[2].seconds == doctest::Approx(0.30583e-3).epsilon(1e-3));
  CHECK_THROWS_AS(pipeline::copy_estimates(seed, 0), std::invalid_argument);
}

}  // namespace tg
