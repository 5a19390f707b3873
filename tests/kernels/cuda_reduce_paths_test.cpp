// reduce_sum's execution paths (kernels/cuda/reduce.cuh) on the launcher directly: a
// warp per row or per chunk of a row, a block per column tile with its block partials
// in turn, or in separate blocks whose last one finishes the tile, in runs of a small
// scratch; float4 or scalar loads. All of them must give the CPU's sums and, for one
// input, the same bits. And the padding contract: zero rows appended at the end of the
// reduced axis leave every output bit unchanged.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cuda/cuda_kernels.h"
#include "tests/kernels/cuda_op_harness.h"
#include "tests/gpu_skip.h"

namespace tg::testing {

namespace {

using Geometry = ReduceGeometry;

std::string name(Geometry g) { return fmt::format("[{}, {}, {}]", g.outer, g.len, g.inner); }

// Scratch sizes that pick every path: none (looped / warp per row), too small for one
// column tile (looped), a few tiles or rows per launch, the backend's 8 MiB.
const size_t kScratchSizes[] = {0, 4096, 40000, size_t{8} << 20};

}  // namespace

TEST_CASE("cuda reduce_sum: every path gives the CPU's sums, and all of them the same bits") {
  TG_REQUIRE_GPU();
  const Geometry shapes[] = {
      // inner == 1: a warp per row (one chunk; 2200 rows of two chunks), a warp per chunk
      {16384, 1024, 1}, {2200, 8200, 1}, {3, 20000, 1}, {1, 100003, 1}, {1, 8192, 1}, {1, 8193, 1}, {7, 1, 1},
      {5, 13, 1},
      // inner > 1: one block partial (len <= 128), split over 32, looped over many tiles,
      // partial column tiles, scalar loads (inner % 4 != 0), a middle axis
      {1, 128, 1024}, {1, 129, 1024}, {1, 20000, 1024}, {1, 5000, 130}, {1, 100000, 3}, {1, 4097, 513},
      {300, 300, 4}, {1000, 200, 8}, {3, 500, 7}, {2, 1, 9}, {1, 7, 2}, {2, 300, 4100}};
  uint64_t seed = 20000;
  for (const Geometry& g : shapes) {
    const std::vector<float> x = random_vector(g.outer * g.len * g.inner, seed++);
    std::vector<float> want(static_cast<size_t>(g.outer * g.inner));
    kernels::cpu_reduce_sum(x.data(), want.data(), g.outer, g.len, g.inner);
    std::vector<float> first;
    for (size_t bytes : kScratchSizes)
      for (bool unaligned : {false, true}) {
        const std::vector<float> got = gpu_reduce(x, g, unaligned, bytes);
        const std::string what = fmt::format("reduce_sum {} unaligned={} scratch={}", name(g), unaligned, bytes);
        INFO(what);
        if (first.empty()) {
          CHECK(compare(what + " vs CPU", got, want, Tol{1e-5, 1e-5}) == 0);
          first = got;
        } else {
          CHECK(compare(what + " vs the first GPU run", got, first, Tol{0, 0}) == 0);
        }
        CHECK(compare(what + " run 2", gpu_reduce(x, g, unaligned, bytes), got, Tol{0, 0}) == 0);
      }
    // reduce_mean is the same sum, scaled.
    std::vector<float> want_mean(want.size());
    kernels::cpu_reduce_mean(x.data(), want_mean.data(), g.outer, g.len, g.inner);
    CHECK(compare("reduce_mean " + name(g), gpu_reduce(x, g, false, size_t{8} << 20, true), want_mean,
                  Tol{1e-6, 1e-5}) == 0);
  }
}

TEST_CASE("cuda reduce_sum: zero rows appended to the reduced axis leave every output bit unchanged") {
  TG_REQUIRE_GPU();
  struct Pad {
    Geometry g;
    std::vector<int64_t> extra;
  };
  const Pad cases[] = {
      {{1, 1, 1024}, {1, 127, 128, 5000}},  {{1, 100, 1024}, {28, 29, 4096}}, {{1, 128, 512}, {1, 4096}},
      {{1, 4097, 1024}, {1, 4095, 4096}},   {{1, 9000, 130}, {1, 7000}},      {{3, 250, 7}, {6, 300}},
      {{2, 1000, 4100}, {1, 200}},          {{1, 1000, 1}, {1, 7192, 8193}},  {{1, 8192, 1}, {1, 100000}},
      {{1, 100003, 1}, {5, 300000}},        {{4, 5000, 1}, {3192, 4000}},     {{1, 3, 3}, {1, 125, 126, 9000}},
      {{1, 16000, 33}, {385, 50000}}};
  uint64_t seed = 21000;
  for (const Pad& p : cases) {
    const Geometry g = p.g;
    const std::vector<float> x = random_vector(g.outer * g.len * g.inner, seed++);
    for (bool unaligned : {false, true})
      for (size_t bytes : {size_t{0}, size_t{8} << 20}) {
        const std::vector<float> want = gpu_reduce(x, g, unaligned, bytes);
        for (int64_t k : p.extra) {
          // Each outer block gains k zero rows at the end of its axis.
          const Geometry gp{g.outer, g.len + k, g.inner};
          const std::vector<float> xp = pad_rows(x, g, k);
          const std::string what =
              fmt::format("reduce_sum {} + {} zero rows, unaligned={} scratch={}", name(g), k, unaligned, bytes);
          INFO(what);
          CHECK(compare(what, gpu_reduce(xp, gp, unaligned, bytes), want, Tol{0, 0}) == 0);
        }
      }
  }
}

}  // namespace tg::testing
