#pragma once
// tg-pipeline's image batches: what a data loader hands over for a CNN, the seed's
// (32, 224, 224, 3) batch of uint8 RGB pixels (NHWC, as images are decoded), normalized to the
// network's f32 NCHW input with ImageNet's per-channel mean and std, as torchvision's
// ToTensor + Normalize do: y = (x / 255 - mean[c]) / std[c]. Either the host normalizes and
// copies f32 (4 bytes an element), or it copies the uint8 pixels (1 byte) and the GPU
// normalizes (image_normalize_cuda.h). Both compute the same float operations in the same
// order (a division, a subtraction, a division: nothing a compiler may contract), so the two
// give the same bits.
#include <cstdint>
#include <vector>

namespace tg::pipeline {

// How a batch reaches the network: u8 (the pixels copied, normalized on the device) or f32
// (normalized on the host, the floats copied).
enum class ImagePath { u8, f32 };
const char* image_path_name(ImagePath p);  // "u8_device_normalize", "f32_host_normalize"

struct ImageShape {
  int64_t n = 32, h = 224, w = 224, c = 3;  // NHWC on the host; the network reads NCHW
  int64_t elems() const { return n * h * w * c; }
};

// ImageNet's statistics, torchvision's Normalize values.
inline constexpr float kImageNetMean[3] = {0.485f, 0.456f, 0.406f};
inline constexpr float kImageNetStd[3] = {0.229f, 0.224f, 0.225f};

// One element: pixel x of channel ch.
inline float normalize_pixel(uint8_t x, int64_t ch) {
  const float v = static_cast<float>(x) / 255.0f;
  return (v - kImageNetMean[ch]) / kImageNetStd[ch];
}

// Deterministic pseudo-random pixels, s.elems() bytes, NHWC. Throws std::invalid_argument
// for a shape with a dimension below 1 or a channel count other than 3.
std::vector<uint8_t> make_image_batch(const ImageShape& s, uint64_t seed);
// The CPU reference and the host's half of the f32 path: NHWC uint8 -> NCHW f32, normalized.
void normalize_images(const uint8_t* nhwc, float* nchw, const ImageShape& s);

// The bytes one batch puts on the link, per element size, and the time a link of `gbps`
// (10^9 bytes/s) would take for them: the estimate beside the measured copy.
struct CopyEstimate {
  const char* what;  // "f64_sized" (the seed's 8 bytes), "f32", "u8"
  int bytes_per_element;
  int64_t bytes;
  double seconds;
};
// The seed's figure (8 bytes an element: a float64's size, not the float32 the network
// reads), float32's and uint8's, at `gbps`.
std::vector<CopyEstimate> copy_estimates(const ImageShape& s, double gbps);
// The link the seed's estimate assumes: PCIe 3.0 x16, 8 GT/s x 16 lanes x 128/130 / 8.
inline constexpr double kSeedPcieGBps = 15.75;

}  // namespace tg::pipeline
