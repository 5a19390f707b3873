#pragma once
// Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2, 3",
// SC 2011), the counter-based generator dropout draws its mask from, and the mask itself.
// One header for the CPU reference (kernels/cpu/dropout.cpp) and the CUDA kernel
// (kernels/cuda/dropout.cu): both compile these functions, so they cannot drift apart.
//
// A counter-based generator has no state to carry from one element to the next: the bits
// of element i are philox(counter(i), key) for any i, in any order, on any device. That is
// what lets the mask be the same on the CPU and the GPU, in the static and the dynamic
// executor, on a CUDA-graph replay, and in the gradient, which redraws it instead of
// storing it.
//
// The mask of dropout (graph/dropout.h) over a tensor of n elements, from the rng state
// (seed, offset) and the node's rng_stream: element i keeps its value when word i % 4 of
//   philox({i / 4, rng_stream, offset low, offset high}, {seed low, seed high})
// is at or above p * 2^32 (rounded down), and is multiplied by 1 / (1 - p) then. The mask
// depends on neither the dtype nor the shape, only on (seed, offset, rng_stream, i).
#include <cstdint>

#include "graph/float_formats.h"  // TG_HOST_DEVICE

namespace tg::kernels {

struct Philox4 {
  uint32_t w[4];
};

namespace philox_detail {
constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;  // the round multipliers
constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;  // the key schedule's increments

TG_HOST_DEVICE inline void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t p = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}
}  // namespace philox_detail

// Philox4x32 with 10 rounds: the 128-bit counter c under the 64-bit key (k0, k1).
TG_HOST_DEVICE inline Philox4 philox4x32_10(Philox4 c, uint32_t k0, uint32_t k1) {
  using namespace philox_detail;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += kWeyl0;
      k1 += kWeyl1;
    }
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kMul0, c.w[0], hi0, lo0);
    mulhilo(kMul1, c.w[2], hi1, lo1);
    c = Philox4{{hi1 ^ c.w[1] ^ k0, lo1, hi0 ^ c.w[3] ^ k1, lo0}};
  }
  return c;
}

// The elements one Philox call gives words for.
constexpr int64_t kDropoutGroup = 4;
// The most elements a dropout draws for: the group index is one 32-bit counter word.
constexpr int64_t kDropoutMaxElements = (int64_t{1} << 32) * kDropoutGroup;

// What a dropout of probability p needs. The threshold and the scale are computed once on
// the host, so that every kernel compares against the same threshold and multiplies by the
// same float; the key and the offset come from the rng state, which the CUDA kernel reads on
// the device (a CUDA-graph replay reads the state as rng_advance left it).
struct DropoutParams {
  uint32_t k0 = 0, k1 = 0;      // the key: the seed
  uint32_t c1 = 0;              // the node's rng_stream
  uint32_t c2 = 0, c3 = 0;      // the offset
  uint32_t threshold = 0;       // a word below it drops its element: floor(p * 2^32)
  float scale = 1.0f;           // 1 / (1 - p), as float
};

// p in [0, 1) (the shape rule refuses the rest); the rng state set apart.
inline DropoutParams dropout_params(float p, int64_t rng_stream) {
  DropoutParams d;
  d.c1 = static_cast<uint32_t>(rng_stream);
  d.threshold = static_cast<uint32_t>(static_cast<double>(p) * 4294967296.0);
  d.scale = 1.0f / (1.0f - p);
  return d;
}

// The rng state (seed, offset) into d.
TG_HOST_DEVICE inline void dropout_set_state(DropoutParams& d, uint64_t seed, uint64_t offset) {
  d.k0 = static_cast<uint32_t>(seed);
  d.k1 = static_cast<uint32_t>(seed >> 32);
  d.c2 = static_cast<uint32_t>(offset);
  d.c3 = static_cast<uint32_t>(offset >> 32);
}

// The four words of group g (elements 4g .. 4g + 3).
TG_HOST_DEVICE inline Philox4 dropout_words(const DropoutParams& d, uint64_t group) {
  return philox4x32_10(Philox4{{static_cast<uint32_t>(group), d.c1, d.c2, d.c3}}, d.k0, d.k1);
}

// What an element is multiplied by: the scale when kept, 0 when dropped. A multiply, not a
// select, so that an inf or a NaN dropped still gives NaN, as x * mask does in PyTorch.
TG_HOST_DEVICE inline float dropout_factor(const DropoutParams& d, uint32_t word) {
  return word >= d.threshold ? d.scale : 0.0f;
}

}  // namespace tg::kernels
