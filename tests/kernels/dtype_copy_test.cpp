// kernels/dtype_copy.h on the CPU backend: copy_to_host_into gives copy_to_host_from's bits in
// every dtype, keeps the caller's storage from call to call, and load_from_dtype_parallel
// gives load_from_dtype's bits whatever the thread count and remainder.
#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "graph/float_formats.h"
#include "kernels/dtype_copy.h"
#include "kernels/backend.h"

namespace tg {
namespace {

std::vector<float> random_values(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 10.0f);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("load_from_dtype_parallel == load_from_dtype bitwise, any thread count and remainder") {
  for (DType dt : {DType::BF16, DType::F16, DType::F32, DType::I32}) {
    for (size_t n : {size_t{1000}, kParallelWidenElements, kParallelWidenElements + 7}) {
      const std::vector<float> values = random_values(n, n + static_cast<size_t>(dt));
      std::vector<unsigned char> stored(n * static_cast<size_t>(dtype_size(dt)));
      std::vector<float> rounded(values);
      if (dt == DType::I32)
        for (float& x : rounded) x = static_cast<float>(static_cast<int32_t>(x));
      store_as_dtype(rounded.data(), n, dt, stored.data());
      std::vector<float> want(n);
      load_from_dtype(stored.data(), n, dt, want.data());
      for (int threads : {1, 2, 3, 8}) {
        INFO(dtype_name(dt), " n ", n, " threads ", threads);
        std::vector<float> got(n, -1.0f);
        load_from_dtype_parallel(stored.data(), n, dt, got.data(), threads);
        CHECK(same_bits(got, want));
      }
    }
  }
}

TEST_CASE("copy_to_host_into == copy_to_host_from in every float dtype, in the caller's storage") {
  std::unique_ptr<Backend> be(make_cpu_backend());
  for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
    const size_t n = kParallelWidenElements + 3;  // the widening's threaded path
    const std::vector<float> values = random_values(n, 5);
    void* dev = be->raw_alloc(n * static_cast<size_t>(dtype_size(dt)));
    copy_to_device_as(*be, dev, values, dt);
    const std::vector<float> want = copy_to_host_from(*be, dev, static_cast<int64_t>(n), dt);
    std::vector<float> out;
    std::vector<unsigned char> staging;
    copy_to_host_into(*be, dev, static_cast<int64_t>(n), dt, out, staging);
    INFO(dtype_name(dt));
    CHECK(same_bits(out, want));
    const float* data = out.data();
    const size_t staged = staging.size();
    std::fill(out.begin(), out.end(), 0.0f);
    copy_to_host_into(*be, dev, static_cast<int64_t>(n), dt, out, staging);
    CHECK(same_bits(out, want));
    CHECK(out.data() == data);        // the same storage: nothing allocated
    CHECK(staging.size() == staged);  // nor staging grown
    // A smaller read shrinks the vector, not the staging, and gives the prefix.
    copy_to_host_into(*be, dev, 10, dt, out, staging);
    CHECK(out.size() == 10);
    CHECK(staging.size() == staged);
    CHECK(std::memcmp(out.data(), want.data(), 10 * sizeof(float)) == 0);
    be->raw_free(dev);
  }
}

}  // namespace tg
