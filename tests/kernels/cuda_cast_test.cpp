// cast on CUDA against the CPU reference, bit for bit, between every pair of dtypes: random
// values across the exponent range, the ties of both 16-bit formats, infinities, NaN,
// subnormals and f16's overflow edge; and the CUDA entry's refusal of the ops that have no
// 16-bit kernel (Backend::runs).
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

}  // namespace

TEST_CASE("cuda cast between every pair of dtypes equals the CPU reference bitwise") {
  TG_REQUIRE_GPU();
  auto gpu = make_cuda_backend(0);
  const DType all[] = {DType::F32, DType::BF16, DType::F16};
  for (size_t n : {size_t{18}, size_t{1000}, size_t{4099}, size_t{1} << 20}) {
    const std::vector<float> values = cast_inputs(n);
    const Shape s{static_cast<int64_t>(n)};
    for (DType from : all)
      for (DType to : all) {
        CAPTURE(n);
        CAPTURE(static_cast<int>(from));
        CAPTURE(static_cast<int>(to));
        Attrs at;
        at.to = to;
        const std::vector<char> in = bytes_of(values, from);
        std::vector<char> want(n * static_cast<size_t>(dtype_size(to)), 0x5a), got(want.size(), 0x5a);
        std::vector<char> in_host = in;
        kernels::OpCall c;
        c.op = OpKind::cast;
        c.attrs = &at;
        c.num_inputs = 1;
        c.in[0] = {reinterpret_cast<float*>(in_host.data()), s, from};
        c.out = {reinterpret_cast<float*>(want.data()), s, to};
        kernels::run_cpu(c);

        void* din = gpu->raw_alloc(in.size());
        void* dout = gpu->raw_alloc(got.size());
        gpu->copy_to_device(din, in.data(), in.size());
        gpu->copy_to_device(dout, got.data(), got.size());  // the poison: 0x5a bytes
        c.in[0] = {static_cast<float*>(din), s, from};
        c.out = {static_cast<float*>(dout), s, to};
        gpu->run(c);
        gpu->synchronize();
        gpu->copy_to_host(got.data(), dout, got.size());
        gpu->raw_free(din);
        gpu->raw_free(dout);
        size_t first = got.size();
        for (size_t i = 0; i < got.size() && first == got.size(); ++i)
          if (got[i] != want[i]) first = i;
        CHECK_MESSAGE(first == got.size(), "first differing byte ", first, " of ", got.size());
      }
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
