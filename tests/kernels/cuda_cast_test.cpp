// cast on CUDA against the CPU reference, bit for bit, between every pair of dtypes: random
// values across the exponent range, the ties of both 16-bit formats, infinities, NaN,
// subnormals and f16's overflow edge; every 16-bit pattern and a sweep of f32 patterns
// (the conversions every 16-bit kernel loads and stores with); and the CUDA entry's refusal
// of the ops that have no 16-bit kernel (Backend::runs).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/float_formats.h"
#include "graph/shape_inference.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cuda/cuda_backend.h"
#include "tests/common/op_samples.h"
#include "tests/gpu_skip.h"

namespace tg::testing {

namespace {

std::vector<float> cast_inputs(size_t n) {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.99f, 65520.0f, 1e30f, -3.0e38f,
                          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::denorm_min(),
                          std::ldexp(1.0f, -25), std::ldexp(1.5f, -25), 1.0f + std::ldexp(1.0f, -8),
                          1.0f + std::ldexp(3.0f, -8), 1.0f + std::ldexp(1.0f, -11)};
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> exp(-30, 20);
  std::normal_distribution<float> mant(0.0f, 1.0f);
  while (v.size() < n) v.push_back(std::ldexp(mant(rng), exp(rng)));
  v.resize(n);
  return v;
}

// Host bytes of `values` in dtype dt (the CPU's own rounding).
std::vector<char> bytes_of(const std::vector<float>& values, DType dt) {
  std::vector<char> b(values.size() * static_cast<size_t>(dtype_size(dt)));
  store_as_dtype(values.data(), values.size(), dt, b.data());
  return b;
}

// n elements of dtype `from` (the bytes `in`) cast to `to` on the CPU reference, and on the
// GPU into an output poisoned with 0x5a bytes.
std::vector<char> cast_bytes(Backend* gpu, const std::vector<char>& in, DType from, DType to, size_t n) {
  const Shape s{static_cast<int64_t>(n)};
  Attrs at;
  at.to = to;
  std::vector<char> in_copy = in, out(n * static_cast<size_t>(dtype_size(to)), 0x5a);
  kernels::OpCall c;
  c.op = OpKind::cast;
  c.attrs = &at;
  c.num_inputs = 1;
  if (!gpu) {
    c.in[0] = {reinterpret_cast<float*>(in_copy.data()), s, from};
    c.out = {reinterpret_cast<float*>(out.data()), s, to};
    kernels::run_cpu(c);
    return out;
  }
  void* din = gpu->raw_alloc(in.size());
  void* dout = gpu->raw_alloc(out.size());
  gpu->copy_to_device(din, in.data(), in.size());
  gpu->copy_to_device(dout, out.data(), out.size());
  c.in[0] = {static_cast<float*>(din), s, from};
  c.out = {static_cast<float*>(dout), s, to};
  gpu->run(c);
  gpu->synchronize();
  gpu->copy_to_host(out.data(), dout, out.size());
  gpu->raw_free(din);
  gpu->raw_free(dout);
  return out;
}

// The first byte where the GPU's cast differs from the CPU's, or the size when none does.
size_t first_difference(Backend& gpu, const std::vector<char>& in, DType from, DType to, size_t n) {
  const std::vector<char> want = cast_bytes(nullptr, in, from, to, n), got = cast_bytes(&gpu, in, from, to, n);
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i]) return i;
  return got.size();
}

}  // namespace

TEST_CASE("cuda cast between every pair of dtypes equals the CPU reference bitwise") {
  TG_REQUIRE_GPU();
  auto gpu = make_cuda_backend(0);
  const DType all[] = {DType::F32, DType::BF16, DType::F16};
  for (size_t n : {size_t{18}, size_t{1000}, size_t{4099}, size_t{1} << 20}) {
    const std::vector<float> values = cast_inputs(n);
    for (DType from : all)
      for (DType to : all) {
        CAPTURE(n);
        CAPTURE(static_cast<int>(from));
        CAPTURE(static_cast<int>(to));
        const size_t bytes = n * static_cast<size_t>(dtype_size(to));
        const size_t first = first_difference(*gpu, bytes_of(values, from), from, to, n);
        CHECK_MESSAGE(first == bytes, "first differing byte ", first, " of ", bytes);
      }
  }
}

// The kernels' conversions (kernels/cuda/storage.h: f16 by the conversion instructions) give
// graph/float_formats.h's bits: every 16-bit pattern widened (and narrowed to the other
// 16-bit dtype), and f32 patterns narrowed: every upper half, each with the lower halves
// at and around the rounding points of bf16 (0x8000) and f16 (0x1000, and the subnormals'
// points above), and a few random ones.
TEST_CASE("cuda cast: every 16-bit pattern and a sweep of f32 patterns, bitwise as graph/float_formats.h") {
  TG_REQUIRE_GPU();
  auto gpu = make_cuda_backend(0);
  std::vector<char> all16(size_t{2} << 16);
  for (uint32_t h = 0; h < (1u << 16); ++h) std::memcpy(&all16[2 * h], &h, 2);  // little endian, as the GPU
  for (DType from : {DType::BF16, DType::F16})
    for (DType to : {DType::F32, DType::BF16, DType::F16}) {
      if (to == from) continue;
      CAPTURE(static_cast<int>(from));
      CAPTURE(static_cast<int>(to));
      const size_t bytes = (size_t{1} << 16) * static_cast<size_t>(dtype_size(to));
      const size_t first = first_difference(*gpu, all16, from, to, size_t{1} << 16);
      CHECK_MESSAGE(first == bytes, "first differing byte ", first, " of ", bytes);
    }
  std::vector<uint32_t> lows = {0x0000, 0x0001, 0x0FFF, 0x1000, 0x1001, 0x1FFF, 0x2000, 0x3000,
                                0x4000, 0x6000, 0x7FFF, 0x8000, 0x8001, 0xC000, 0xFFFF};
  std::mt19937 rng(11);
  std::vector<char> f32s;
  for (uint32_t hi = 0; hi < (1u << 16); ++hi)
    for (size_t k = 0; k < lows.size() + 3; ++k) {
      const uint32_t lo = k < lows.size() ? lows[k] : rng() & 0xFFFFu;
      const uint32_t u = hi << 16 | lo;
      const char* b = reinterpret_cast<const char*>(&u);
      f32s.insert(f32s.end(), b, b + 4);
    }
  const size_t n = f32s.size() / 4;
  for (DType to : {DType::BF16, DType::F16}) {
    CAPTURE(static_cast<int>(to));
    const size_t first = first_difference(*gpu, f32s, DType::F32, to, n);
    CHECK_MESSAGE(first == 2 * n, "first differing byte ", first, " of ", 2 * n);
  }
}

TEST_CASE("cuda refuses a 16-bit call to an op without a 16-bit kernel, naming the op and the dtype") {
  TG_REQUIRE_GPU();
  auto gpu = make_cuda_backend(0);
  int refused = 0, with_kernel = 0;
  for (int k = 0; k < kNumOps; ++k) {
    const auto op = static_cast<OpKind>(k);
    if (op_is_f32_only(op) || op == OpKind::cast) continue;
    for (DType dt : {DType::BF16, DType::F16}) {
      if (gpu->runs(op, dt)) {
        ++with_kernel;
        continue;
      }
      const OpSample s = op_samples(op).front();
      const Shape out_shape = infer_shape(op, s.in, s.attrs, "sample");
      std::vector<cuda::DeviceBuffer> bufs;
      bufs.reserve(static_cast<size_t>(kMaxOpInputs) + 1);
      kernels::OpCall c;
      c.op = op;
      c.attrs = &s.attrs;
      c.num_inputs = static_cast<int>(s.in.size());
      REQUIRE(c.num_inputs <= kMaxOpInputs);
      for (int i = 0; i < c.num_inputs; ++i) {
        bufs.push_back(cuda::DeviceBuffer::allocate(static_cast<size_t>(s.in[static_cast<size_t>(i)].numel()) * 2));
        c.in[static_cast<size_t>(i)] = {static_cast<float*>(bufs.back().get()), s.in[static_cast<size_t>(i)], dt};
      }
      bufs.push_back(cuda::DeviceBuffer::allocate(static_cast<size_t>(out_shape.numel()) * 2));
      c.out = {static_cast<float*>(bufs.back().get()), out_shape, dt};
      if (op_num_outputs(op) == 2) {
        const Shape s2 = infer_shapes(op, s.in, s.attrs, "sample").at(1);
        bufs.push_back(cuda::DeviceBuffer::allocate(static_cast<size_t>(s2.numel()) * 2));
        c.out2 = {static_cast<float*>(bufs.back().get()), s2, dt};
      }
      const std::string want = std::string("run_cuda ") + op_name(op) + ": no CUDA kernel for " + dtype_name(dt);
      CHECK_THROWS_WITH_AS(gpu->run(c), doctest::Contains(want.c_str()), std::invalid_argument);
      ++refused;
    }
  }
  MESSAGE(refused, " op-dtype pairs refused, ", with_kernel, " with a 16-bit kernel");
  CHECK(refused + with_kernel > 0);
}

}  // namespace tg::testing
