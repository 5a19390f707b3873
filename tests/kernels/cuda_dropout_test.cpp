// dropout and rng_advance on CUDA against the CPU reference, bit for bit: every float dtype,
// sizes around the four-element Philox groups and past one grid, aligned (4-element loads)
// and not, in place; a seed and an offset past 32 bits; the offset advanced on the device.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "tests/gpu_skip.h"
#include "tests/kernels/cuda_op_harness.h"

namespace tg::testing {

TEST_CASE("cuda dropout == cpu bitwise in every dtype, aligned or not, in place or not") {
  TG_REQUIRE_GPU();
  uint64_t seed = 4100;
  for (DType dt : {DType::F32, DType::BF16, DType::F16})
    for (int64_t n : {int64_t{1}, int64_t{3}, int64_t{4}, int64_t{5}, int64_t{1023}, int64_t{4099}, int64_t{3} << 20})
      for (bool unaligned : {false, true})
        for (bool in_place : {false, true}) {
          OpCase c;
          c.op = OpKind::dropout;
          c.dtype = dt;
          c.in = {Shape{n}, Shape{2}};
          c.out = Shape{n};
          c.attrs.p = n % 2 ? 0.1f : 0.6f;
          c.attrs.rng_stream = n % 5;
          c.labels_input = 1;
          c.labels_classes = 1 << 20;
          c.labels_dtype = DType::I64;
          c.unaligned = unaligned;
          c.alias_input = in_place ? 0 : -1;
          c.seed = seed++;
          TG_CHECK_CASE(c);  // tolerance 0: the same Philox words, the same float multiply
        }
}

TEST_CASE("cuda dropout: a seed and an offset past 32 bits draw the CPU's mask, and rng_advance counts on the device") {
  TG_REQUIRE_GPU();
  // Powers of two past 2^32 are exact in the f32 the harness uploads through.
  const std::vector<float> state = {1099511627776.0f + 8589934592.0f, 34359738368.0f};
  const int64_t n = 10001;
  const std::vector<float> x = random_vector(n, 12);
  Attrs at;
  at.p = 0.25f;
  at.rng_stream = 9;
  std::vector<int64_t> rng_host = {static_cast<int64_t>(state[0]), static_cast<int64_t>(state[1])};
  std::vector<float> x_host = x, want(static_cast<size_t>(n));
  kernels::OpCall c;
  c.op = OpKind::dropout;
  c.attrs = &at;
  c.num_inputs = 2;
  c.in[0] = {x_host.data(), Shape{n}, DType::F32};
  c.in[1] = {reinterpret_cast<float*>(rng_host.data()), Shape{2}, DType::I64};
  c.out = {want.data(), Shape{n}, DType::F32};
  kernels::run_cpu(c);

  DevTensor dx(x, false), rng(state, false, DType::I64), out(n, false);
  out.poison();
  run_op(OpKind::dropout, {dx.view({n}), rng.view({2})}, out.view({n}), at);
  CHECK(compare("dropout, 64-bit seed and offset", out.download(), want, {}) == 0);

  // A small state, so that the f32 read-back holds the count exactly.
  DevTensor small(std::vector<float>{5.0f, 40.0f}, false, DType::I64);
  for (int i = 0; i < 3; ++i) run_op(OpKind::rng_advance, {small.view({2})}, {}, Attrs{});
  CHECK(small.download() == std::vector<float>{5.0f, 43.0f});
}

}  // namespace tg::testing
