// Philox4x32-10 against Random123's published known answers, and dropout's mask on the CPU
// reference: a pure function of (seed, offset, rng_stream, index), the same in every dtype,
// scaled by 1 / (1 - p), redrawn for the gradient; rng_advance moves the offset.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "graph/float_formats.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/philox.h"
#include "tests/kernels/kernel_test_util.h"

namespace {

using namespace tg;
using kernels::OpCall;
using kernels::TensorView;
using testing::view;

std::vector<float> run_dropout(std::vector<float> x, std::vector<int64_t> rng, float p, int64_t stream) {
  Attrs at;
  at.p = p;
  at.rng_stream = stream;
  std::vector<float> y(x.size(), NAN);
  const Shape s{static_cast<int64_t>(x.size())};
  OpCall c;
  c.op = OpKind::dropout;
  c.attrs = &at;
  c.num_inputs = 2;
  c.in[0] = view(x, s, DType::F32);
  c.in[1] = view(rng, Shape{2}, DType::I64);
  c.out = view(y, s, DType::F32);
  kernels::run_cpu(c);
  return y;
}

std::vector<float> ones(int64_t n) { return std::vector<float>(static_cast<size_t>(n), 1.0f); }

// Which elements a dropout of ones kept.
std::vector<bool> kept(const std::vector<float>& y) {
  std::vector<bool> k;
  for (float v : y) k.push_back(v != 0.0f);
  return k;
}

}  // namespace

TEST_CASE("philox4x32_10 gives Random123's known answers") {
  // Random123's kat_vectors for philox4x32 with 10 rounds: counter, key, result.
  struct Kat {
    kernels::Philox4 ctr;
    uint32_t k0, k1;
    kernels::Philox4 want;
  };
  const Kat kats[] = {
      {{{0, 0, 0, 0}}, 0, 0, {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}}},
      {{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}},
       0xffffffffu,
       0xffffffffu,
       {{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}}},
      {{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}},
       0xa4093822u,
       0x299f31d0u,
       {{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}}},
  };
  for (const Kat& k : kats) {
    const kernels::Philox4 got = kernels::philox4x32_10(k.ctr, k.k0, k.k1);
    for (int i = 0; i < 4; ++i) CHECK(got.w[i] == k.want.w[i]);
  }
}

TEST_CASE("dropout keeps 1 - p of the elements, scaled by 1 / (1 - p), and drops the rest to 0") {
  const int64_t n = 40000;
  for (float p : {0.1f, 0.5f, 0.9f}) {
    const std::vector<float> y = run_dropout(ones(n), {1234, 5}, p, 0);
    const float scale = 1.0f / (1.0f - p);
    int64_t dropped = 0;
    for (float v : y) {
      CHECK((v == 0.0f || v == scale));
      dropped += v == 0.0f;
    }
    // A binomial count: 5 standard deviations (at most 0.0125 of n) either side.
    CHECK(std::fabs(static_cast<double>(dropped) / n - p) < 0.0125);
  }
  // p = 0 is the identity, bit for bit.
  std::vector<float> x(37);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.37f * static_cast<float>(i) - 5.1f;
  const std::vector<float> same = run_dropout(x, {9, 9}, 0.0f, 2);
  for (size_t i = 0; i < x.size(); ++i) CHECK(f32_bits(same[i]) == f32_bits(x[i]));
}

TEST_CASE("dropout's mask is a function of the seed, the offset, the stream and the index only") {
  const std::vector<bool> base = kept(run_dropout(ones(4003), {77, 3}, 0.5f, 4));
  // The same state again: the same mask.
  CHECK(kept(run_dropout(ones(4003), {77, 3}, 0.5f, 4)) == base);
  // A shorter tensor: the first elements' bits, including a partial group of four.
  const std::vector<bool> prefix = kept(run_dropout(ones(37), {77, 3}, 0.5f, 4));
  CHECK(prefix == std::vector<bool>(base.begin(), base.begin() + 37));
  // Any other seed, offset or stream: another mask (4003 coin flips agreeing by chance: 2^-4003).
  CHECK(kept(run_dropout(ones(4003), {78, 3}, 0.5f, 4)) != base);
  CHECK(kept(run_dropout(ones(4003), {77, 4}, 0.5f, 4)) != base);
  CHECK(kept(run_dropout(ones(4003), {77, 3}, 0.5f, 5)) != base);
  // Each element's bit from Philox directly: word i % 4 of the block of group i / 4.
  kernels::DropoutParams d = kernels::dropout_params(0.5f, 4);
  kernels::dropout_set_state(d, 77, 3);
  for (int64_t i = 0; i < 4003; i += 97) {
    const kernels::Philox4 w = kernels::dropout_words(d, static_cast<uint64_t>(i / 4));
    CHECK(base[static_cast<size_t>(i)] == (w.w[i % 4] >= 0x80000000u));
  }
}

TEST_CASE("dropout drops the same elements in f32, bf16 and f16, and a dropped NaN stays NaN") {
  const int64_t n = 999;
  const std::vector<bool> f32 = kept(run_dropout(ones(n), {31, 2}, 0.3f, 1));
  Attrs at;
  at.p = 0.3f;
  at.rng_stream = 1;
  std::vector<int64_t> rng = {31, 2};
  for (DType dt : {DType::BF16, DType::F16}) {
    const uint16_t one = dt == DType::BF16 ? bf16_from_f32(1.0f) : f16_from_f32(1.0f);
    std::vector<uint16_t> x(static_cast<size_t>(n), one), y(static_cast<size_t>(n), 0xFFFFu);
    OpCall c;
    c.op = OpKind::dropout;
    c.attrs = &at;
    c.num_inputs = 2;
    c.in[0] = view(x, Shape{n}, dt);
    c.in[1] = view(rng, Shape{2}, DType::I64);
    c.out = view(y, Shape{n}, dt);
    kernels::run_cpu(c);
    std::vector<bool> k;
    for (uint16_t v : y) k.push_back((v & 0x7FFFu) != 0);
    CHECK(k == f32);
  }
  for (float v : run_dropout(std::vector<float>(64, NAN), {31, 2}, 0.5f, 1)) CHECK(std::isnan(v));
}

TEST_CASE("dropout's gradient, the same dropout of dy, zeroes and scales what the forward did") {
  std::vector<float> x(301), dy(301);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = 0.5f + 0.01f * static_cast<float>(i);
    dy[i] = 1.5f - 0.02f * static_cast<float>(i);
  }
  const std::vector<float> y = run_dropout(x, {5, 8}, 0.2f, 3);
  const std::vector<float> dx = run_dropout(dy, {5, 8}, 0.2f, 3);
  const float scale = 1.0f / (1.0f - 0.2f);
  for (size_t i = 0; i < x.size(); ++i) {
    CHECK(f32_bits(y[i]) == f32_bits(y[i] == 0.0f ? 0.0f : x[i] * scale));
    CHECK(f32_bits(dx[i]) == f32_bits(y[i] == 0.0f ? dy[i] * 0.0f : dy[i] * scale));
  }
}

TEST_CASE("rng_advance adds 1 to the offset and leaves the seed") {
  Attrs at;
  for (DType dt : {DType::I64, DType::I32}) {
    std::vector<int64_t> r64 = {12, 41};
    std::vector<int32_t> r32 = {12, 41};
    OpCall c;
    c.op = OpKind::rng_advance;
    c.attrs = &at;
    c.num_inputs = 1;
    c.in[0] = dt == DType::I64 ? view(r64, Shape{2}, dt) : view(r32, Shape{2}, dt);
    kernels::run_cpu(c);
    kernels::run_cpu(c);
    if (dt == DType::I64) CHECK(r64 == std::vector<int64_t>{12, 43});
    else CHECK(r32 == std::vector<int32_t>{12, 43});
  }
}
