// layernorm_grad_gamma_beta (kernels/cuda/layernorm_params.cu) on the launcher: against
// cpu_layernorm_grad_gamma_beta for every row-width regime (a warp to 512 threads per
// row, two chunks per thread, the wide-row path past 4096), one row to many groups,
// aligned and not; dbeta against the column sums of dy; layernorm_grad_gamma's bits;
// the same bits run to run and with zero rows appended; a clear error without scratch;
// and the group-major partials and their finish over group counts that cut the
// finish's runs of 32 in every way. (dev/cuda/colreduce_variants.cu checks these bits
// against the simpler loops the kernel replaced.)
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cuda/cuda_kernels.h"
#include "tests/kernels/cuda_op_harness.h"
#include "tests/gpu_skip.h"

namespace tg::testing {

namespace {

constexpr float kEps = 1e-5f;
constexpr Tol kTol{1e-4, 1e-4};

struct Grads {
  std::vector<float> dgamma, dbeta;
};

// with_beta false passes a null dbeta; scratch_bytes 0 passes no scratch.
Grads gpu_grads(const std::vector<float>& dy, const std::vector<float>& x, int64_t rows, int64_t cols,
                bool unaligned, bool with_beta, size_t scratch_bytes = size_t{8} << 20) {
  DevTensor ddy(dy, unaligned), dx(x, unaligned), dg(cols, unaligned), db(cols, unaligned);
  dg.poison();
  db.poison();
  cuda::DeviceBuffer scratch;
  if (scratch_bytes) scratch = cuda::DeviceBuffer::allocate(scratch_bytes);
  TG_CUDA_CHECK(cudaDeviceSynchronize());
  const cudaStream_t s = backend().stream();
  kernels::cuda::layernorm_grad_gamma_beta(ddy.ptr, dx.ptr, dg.ptr, with_beta ? db.ptr : nullptr, rows, cols, kEps,
                                           scratch_bytes ? scratch.as<float>() : nullptr, scratch_bytes, s);
  TG_CUDA_CHECK(cudaStreamSynchronize(s));
  return {dg.download(), with_beta ? db.download() : std::vector<float>{}};
}

const std::vector<int64_t> kCols = {1, 7, 100, 128, 129, 256, 512, 1000, 1024, 1025, 2048, 2049, 3000, 4096, 4097, 9001};

}  // namespace

TEST_CASE("cuda layernorm_grad_gamma_beta against the CPU, dbeta is the column sums of dy") {
  TG_REQUIRE_GPU();
  uint64_t seed = 30000;
  for (int64_t cols : kCols)
    for (int64_t rows : {int64_t{1}, int64_t{7}, int64_t{16}, int64_t{17}, int64_t{1023}, int64_t{20000}}) {
      if (rows * cols > (int64_t{24} << 20)) continue;  // keep the CPU reference quick
      const std::vector<float> dy = random_vector(rows * cols, seed++), x = random_vector(rows * cols, seed++, -2, 2);
      Grads want{std::vector<float>(static_cast<size_t>(cols)), std::vector<float>(static_cast<size_t>(cols))};
      kernels::cpu_layernorm_grad_gamma_beta(dy.data(), x.data(), want.dgamma.data(), want.dbeta.data(), rows, cols,
                                             kEps);
      std::vector<float> col_sums(static_cast<size_t>(cols));
      kernels::cpu_reduce_sum(dy.data(), col_sums.data(), 1, rows, cols);
      for (bool unaligned : {false, true}) {
        const std::string what = fmt::format("[{}, {}] unaligned={}", rows, cols, unaligned);
        INFO(what);
        const Grads got = gpu_grads(dy, x, rows, cols, unaligned, true);
        CHECK(compare("dgamma " + what, got.dgamma, want.dgamma, kTol) == 0);
        CHECK(compare("dbeta " + what, got.dbeta, want.dbeta, Tol{1e-5, 1e-5}) == 0);
        CHECK(compare("dbeta vs reduce_sum(dy) " + what, got.dbeta, col_sums, Tol{1e-5, 1e-5}) == 0);
        // Without dbeta: layernorm_grad_gamma, the same kernel, the same dgamma bits.
        const Grads only = gpu_grads(dy, x, rows, cols, unaligned, false);
        CHECK(compare("dgamma alone " + what, only.dgamma, got.dgamma, Tol{0, 0}) == 0);
        // Run to run.
        const Grads again = gpu_grads(dy, x, rows, cols, unaligned, true);
        CHECK(compare("second run dgamma " + what, again.dgamma, got.dgamma, Tol{0, 0}) == 0);
        CHECK(compare("second run dbeta " + what, again.dbeta, got.dbeta, Tol{0, 0}) == 0);
      }
    }
}

TEST_CASE("cuda layernorm_grad_gamma_beta: zero rows appended leave dgamma and dbeta bit for bit") {
  TG_REQUIRE_GPU();
  uint64_t seed = 31000;
  for (int64_t cols : {int64_t{1}, int64_t{100}, int64_t{512}, int64_t{1024}, int64_t{2048}, int64_t{3000},
                       int64_t{4096}, int64_t{5000}})
    for (int64_t rows : {int64_t{1}, int64_t{16}, int64_t{100}, int64_t{2049}}) {
      const std::vector<float> dy = random_vector(rows * cols, seed++), x = random_vector(rows * cols, seed++);
      for (bool unaligned : {false, true}) {
        const Grads want = gpu_grads(dy, x, rows, cols, unaligned, true);
        for (int64_t k : {int64_t{1}, int64_t{15}, int64_t{16}, int64_t{3000}}) {
          std::vector<float> dyp = dy, xp = x;
          dyp.resize(static_cast<size_t>((rows + k) * cols), 0.0f);
          xp.resize(dyp.size(), 0.0f);
          const std::string what = fmt::format("[{}, {}] + {} zero rows, unaligned={}", rows, cols, k, unaligned);
          INFO(what);
          const Grads got = gpu_grads(dyp, xp, rows + k, cols, unaligned, true);
          CHECK(compare("dgamma " + what, got.dgamma, want.dgamma, Tol{0, 0}) == 0);
          CHECK(compare("dbeta " + what, got.dbeta, want.dbeta, Tol{0, 0}) == 0);
        }
      }
    }
}

TEST_CASE("cuda layernorm_grad_gamma_beta: group-major partials and their finish, every cut of the runs") {
  TG_REQUIRE_GPU();
  // Groups (kernels/cuda/layernorm_params.cu): [16, 1024] 2 (one short run), [264, 1024]
  // 33 (a run of 1 after a full one), [16384, 1024] 256 of 8 tiles each (tg-kernels' 64
  // MiB case), [777, 96] 13 with 8 slots a block, [5000, 1000] 256 with a short last
  // tile, [1023, 2048] 128 (two chunks a thread), [1032, 3000] and [2000, 4096] 128 of
  // blocks of 512; outputs not a multiple of 32 (96, 1000, 3000 and, with dbeta, 2 x those).
  const std::pair<int64_t, int64_t> shapes[] = {{16, 1024},  {264, 1024}, {16384, 1024}, {777, 96},
                                                {5000, 1000}, {1023, 2048}, {1032, 3000},  {2000, 4096}};
  uint64_t seed = 32000;
  for (const auto& [rows, cols] : shapes) {
    std::vector<float> dy = random_vector(rows * cols, seed++), x = random_vector(rows * cols, seed++, -2, 2);
    // Column 0 of dy cancels exactly in pairs of rows (a slot sums consecutive rows, in
    // double, exactly): dbeta[0] must be +0.0, never -0.0.
    const int64_t even = rows - rows % 2;
    for (int64_t r = 0; r + 1 < rows; r += 2) dy[static_cast<size_t>((r + 1) * cols)] = -dy[static_cast<size_t>(r * cols)];
    if (even < rows) dy[static_cast<size_t>(even * cols)] = 0.0f;
    Grads want{std::vector<float>(static_cast<size_t>(cols)), std::vector<float>(static_cast<size_t>(cols))};
    kernels::cpu_layernorm_grad_gamma_beta(dy.data(), x.data(), want.dgamma.data(), want.dbeta.data(), rows, cols,
                                           kEps);
    for (bool unaligned : {false, true})
      for (bool with_beta : {true, false}) {
        const std::string what =
            fmt::format("[{}, {}] unaligned={} with_beta={}", rows, cols, unaligned, with_beta);
        INFO(what);
        const Grads got = gpu_grads(dy, x, rows, cols, unaligned, with_beta);
        CHECK(compare("dgamma " + what, got.dgamma, want.dgamma, kTol) == 0);
        if (!with_beta) continue;
        CHECK(compare("dbeta " + what, got.dbeta, want.dbeta, Tol{1e-5, 1e-5}) == 0);
        CHECK_FALSE(std::signbit(got.dbeta[0]));
        CHECK(got.dbeta[0] == 0.0f);
      }
  }
}

TEST_CASE("cuda layernorm_grad_gamma_beta: scratch only when rows span several groups, else a clear error") {
  TG_REQUIRE_GPU();
  const int64_t cols = 1024;
  const std::vector<float> dy = random_vector(8 * cols, 1), x = random_vector(8 * cols, 2);
  // 8 rows of 1024 columns are one block's tile (kernels/cuda/layernorm_params.cu): no
  // scratch needed, the same bits as with it; a ninth row makes two blocks.
  CHECK(compare("no scratch", gpu_grads(dy, x, 8, cols, false, true, 0).dgamma,
                gpu_grads(dy, x, 8, cols, false, true).dgamma, Tol{0, 0}) == 0);
  const std::vector<float> dy2 = random_vector(9 * cols, 3), x2 = random_vector(9 * cols, 4);
  for (size_t bytes : {size_t{0}, size_t{1024}}) {
    bool threw = false;
    try {
      gpu_grads(dy2, x2, 9, cols, false, true, bytes);
    } catch (const std::invalid_argument& e) {
      threw = true;
      CHECK(std::string(e.what()).find("scratch") != std::string::npos);
    }
    CHECK(threw);
  }
}

}  // namespace tg::testing
