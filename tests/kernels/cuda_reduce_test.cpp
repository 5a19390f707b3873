// Reductions, layernorm_grad_gamma and mse_loss, plus the
// determinism the executors rely on: the same launch twice gives the same bits. The
// column reductions against the CPU within the tolerance, and their looped and split
// launches (kernels/cuda/reduce.cuh) to the same bits.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/raii.h"
#include "kernels/cuda/reduce.cuh"  // its host part: col_plan, col_tile_outputs
#include "tests/kernels/cuda_op_harness.h"
#include "tests/gpu_skip.h"

namespace tg::testing {

namespace {

constexpr Tol kSumTol{1e-5, 1e-5};

const std::vector<Shape> kReduceShapes = {Shape{1},       Shape{7},          Shape{1023},      Shape{3, 7},
                                          Shape{1023, 1}, Shape{1, 1023},    Shape{65, 1025},  Shape{2, 3, 5},
                                          Shape{4, 1, 9}, Shape{7, 33, 1023}, Shape{2, 3, 4, 5}, Shape{100000, 3}};

Shape without_axis(const Shape& s, int axis) {
  Shape o;
  for (int d = 0; d < s.rank; ++d)
    if (d != axis) o.dims[static_cast<size_t>(o.rank++)] = s[d];
  if (o.rank == 0) o = Shape{1};
  return o;
}

void reduce_cases(OpKind op) {
  uint64_t seed = 5000;
  for (const Shape& s : kReduceShapes)
    for (int axis = 0; axis < s.rank; ++axis)
      for (bool unaligned : {false, true}) {
        OpCase c;
        c.op = op;
        c.attrs.axis = axis;
        c.in = {s};
        c.out = without_axis(s, axis);
        c.tol = kSumTol;
        c.unaligned = unaligned;
        c.seed = seed++;
        TG_CHECK_CASE(c);
      }
}

}  // namespace

TEST_CASE("cuda reduce_sum") {
  TG_REQUIRE_GPU();
  reduce_cases(OpKind::reduce_sum);
}
TEST_CASE("cuda reduce_mean") {
  TG_REQUIRE_GPU();
  reduce_cases(OpKind::reduce_mean);
}

TEST_CASE("cuda layernorm_grad_gamma") {
  TG_REQUIRE_GPU();
  uint64_t seed = 8000;
  for (int64_t rows : {int64_t{1}, int64_t{7}, int64_t{1023}, int64_t{20000}})
    for (int64_t cols : {int64_t{1}, int64_t{7}, int64_t{100}, int64_t{1023}, int64_t{1025}})
      for (bool unaligned : {false, true}) {
        OpCase c;
        c.op = OpKind::layernorm_grad_gamma;
        c.attrs.eps = 1e-5f;
        c.in = {Shape{rows, cols}, Shape{rows, cols}};
        c.out = Shape{cols};
        c.tol = Tol{1e-4, 1e-4};
        c.unaligned = unaligned;
        c.seed = seed++;
        TG_CHECK_CASE(c);
      }
}

TEST_CASE("cuda mse_loss") {
  TG_REQUIRE_GPU();
  uint64_t seed = 9000;
  for (int64_t n : kSizes)
    for (bool unaligned : {false, true}) {
      OpCase c;
      c.op = OpKind::mse_loss;
      c.in = {Shape{n}, Shape{n}};
      c.out = Shape{1};
      c.tol = Tol{1e-7, 1e-6};
      c.unaligned = unaligned;
      c.seed = seed++;
      TG_CHECK_CASE(c);
    }
}

TEST_CASE("cuda padded_mse_loss against the CPU") {
  TG_REQUIRE_GPU();
  uint64_t seed = 9500;
  for (int64_t n : kSizes)
    for (bool unaligned : {false, true})
      for (int64_t count : {int64_t{1}, (n + 1) / 2, n}) {
        OpCase c;
        c.op = OpKind::padded_mse_loss;
        c.in = {Shape{n}, Shape{n}, Shape{1}};
        c.out = Shape{1};
        c.count_input = 2;
        c.count_value = static_cast<float>(count);
        c.tol = Tol{1e-7, 1e-6};
        c.unaligned = unaligned;
        c.seed = seed++;
        TG_CHECK_CASE(c);
      }
}

namespace {
// p and t of n floats on the device, `offset` floats past an aligned allocation.
struct DevPair {
  cuda::DeviceBuffer p, t;
  int64_t offset;
  DevPair(const std::vector<float>& hp, const std::vector<float>& ht, int64_t n, int64_t offset)
      : p(cuda::DeviceBuffer::allocate(static_cast<size_t>(n + offset) * sizeof(float))),
        t(cuda::DeviceBuffer::allocate(static_cast<size_t>(n + offset) * sizeof(float))),
        offset(offset) {
    TG_CUDA_CHECK(cudaMemcpy(pp(), hp.data(), static_cast<size_t>(n) * sizeof(float), cudaMemcpyHostToDevice));
    TG_CUDA_CHECK(cudaMemcpy(tp(), ht.data(), static_cast<size_t>(n) * sizeof(float), cudaMemcpyHostToDevice));
    // A pageable cudaMemcpy may return before its DMA is done, and the backend's
    // stream does not wait for the legacy stream: finish the copies first.
    TG_CUDA_CHECK(cudaDeviceSynchronize());
  }
  float* pp() { return p.as<float>() + offset; }
  float* tp() { return t.as<float>() + offset; }
};
float read_one(const cuda::DeviceBuffer& b) {
  float v = 0;
  TG_CUDA_CHECK(cudaMemcpy(&v, b.get(), sizeof(float), cudaMemcpyDeviceToHost));
  return v;
}
}  // namespace

// What makes the bucket strategy exact: the real prefix of a padded tensor sums to
// the bits of those elements alone, whatever the padding holds, the alignment, the
// number of chunks, and with or without scratch.
TEST_CASE("cuda padded_mse_loss on a padded tensor == mse_loss on its real prefix, bitwise") {
  TG_REQUIRE_GPU();
  const cudaStream_t s = backend().stream();
  auto scratch = cuda::DeviceBuffer::allocate(size_t{1} << 20);
  auto loss = cuda::DeviceBuffer::allocate(sizeof(float));
  auto count = cuda::DeviceBuffer::allocate(sizeof(float));
  const std::pair<int64_t, int64_t> cases[] = {{5, 8},           {1000, 1024},      {16384, 16385}, {16385, 40000},
                                               {100003, 300000}, {1 << 20, (1 << 20) + 77}, {3, 1 << 20}};
  uint64_t seed = 9700;
  for (const auto& [real, padded] : cases) {
    std::vector<float> hp = random_vector(padded, seed++), ht = random_vector(padded, seed++);
    for (int64_t i = real; i < padded; ++i) hp[static_cast<size_t>(i)] = 1e30f;  // padding must not be read
    const float c = static_cast<float>(real);
    TG_CUDA_CHECK(cudaMemcpy(count.get(), &c, sizeof(float), cudaMemcpyHostToDevice));
    TG_CUDA_CHECK(cudaDeviceSynchronize());
    float want = 0;
    bool first = true;
    for (int64_t off_real : {0, 1}) {
      DevPair alone(hp, ht, real, off_real);
      for (bool with_scratch : {true, false}) {
        kernels::cuda::mse_loss(alone.pp(), alone.tp(), loss.as<float>(), real, with_scratch ? scratch.get() : nullptr,
                       with_scratch ? scratch.bytes() : 0, s);
        TG_CUDA_CHECK(cudaStreamSynchronize(s));
        const float got = read_one(loss);
        if (first) want = got;
        first = false;
        INFO("mse_loss real=", real, " offset=", off_real, " scratch=", with_scratch);
        CHECK(compare("mse_loss", {got}, {want}, Tol{0, 0}) == 0);
      }
    }
    for (int64_t off : {0, 1, 2}) {
      DevPair pad(hp, ht, padded, off);
      for (bool with_scratch : {true, false}) {
        kernels::cuda::padded_mse_loss(pad.pp(), pad.tp(), count.as<float>(), loss.as<float>(), padded,
                              with_scratch ? scratch.get() : nullptr, with_scratch ? scratch.bytes() : 0, s);
        TG_CUDA_CHECK(cudaStreamSynchronize(s));
        INFO("padded_mse_loss real=", real, " padded=", padded, " offset=", off, " scratch=", with_scratch);
        CHECK(compare("padded_mse_loss", {read_one(loss)}, {want}, Tol{0, 0}) == 0);
      }
    }
  }
  // A count that is not an integer in [1, n] gives NaN (a kernel cannot throw).
  DevPair pad(random_vector(8, 1), random_vector(8, 2), 8, 0);
  for (float bad : {0.0f, 9.0f, 2.5f}) {
    TG_CUDA_CHECK(cudaMemcpy(count.get(), &bad, sizeof(float), cudaMemcpyHostToDevice));
    TG_CUDA_CHECK(cudaDeviceSynchronize());
    kernels::cuda::padded_mse_loss(pad.pp(), pad.tp(), count.as<float>(), loss.as<float>(), 8, scratch.get(), scratch.bytes(), s);
    TG_CUDA_CHECK(cudaStreamSynchronize(s));
    CHECK(std::isnan(read_one(loss)));
  }
}

TEST_CASE("cuda reductions are deterministic (same bits on every run)") {
  TG_REQUIRE_GPU();
  // Run each reduction-like op twice on the same inputs; both GPU runs must agree
  // bitwise (static and dynamic executors replay the same kernels).
  for (OpKind op : {OpKind::reduce_sum, OpKind::softmax, OpKind::layernorm_grad_gamma, OpKind::mse_loss}) {
    OpCase c;
    c.op = op;
    c.attrs.axis = 0;
    if (op == OpKind::reduce_sum) {
      c.in = {Shape{4097, 513}};
      c.out = Shape{513};
    } else if (op == OpKind::softmax) {
      c.in = {Shape{513, 4097}};
      c.out = Shape{513, 4097};
    } else if (op == OpKind::layernorm_grad_gamma) {
      c.in = {Shape{4097, 513}, Shape{4097, 513}};
      c.out = Shape{513};
    } else {
      c.in = {Shape{1 << 20}, Shape{1 << 20}};
      c.out = Shape{1};
    }
    const Tol loose{1, 1};  // vs the CPU: only the second comparison below is strict
    c.tol = loose;
    CHECK(run_case(c) == 0);
    // run_case makes new inputs from the same seed, so two runs see the same data:
    // compare the GPU with itself through the exact-tolerance path of the harness.
    std::vector<float> first, second;
    for (int run = 0; run < 2; ++run) {
      std::vector<std::vector<float>> host;
      std::vector<cuda::DeviceBuffer> dev;
      kernels::OpCall g;
      g.op = op;
      g.attrs = &c.attrs;
      g.num_inputs = static_cast<int>(c.in.size());
      for (size_t i = 0; i < c.in.size(); ++i) {
        host.push_back(random_vector(c.in[i].numel(), 42 + i));
        dev.push_back(cuda::DeviceBuffer::allocate(host.back().size() * sizeof(float)));
        TG_CUDA_CHECK(cudaMemcpy(dev.back().get(), host.back().data(), host.back().size() * sizeof(float),
                                 cudaMemcpyHostToDevice));
        g.in[i] = {dev.back().as<float>(), c.in[i]};
      }
      auto out = cuda::DeviceBuffer::allocate(static_cast<size_t>(c.out.numel()) * sizeof(float));
      TG_CUDA_CHECK(cudaMemset(out.get(), 0xFF, out.bytes()));
      TG_CUDA_CHECK(cudaDeviceSynchronize());  // the memset is async on the legacy stream
      g.out = {out.as<float>(), c.out};
      backend().run(g);
      backend().synchronize();
      std::vector<float> h(static_cast<size_t>(c.out.numel()));
      TG_CUDA_CHECK(cudaMemcpy(h.data(), out.get(), out.bytes(), cudaMemcpyDeviceToHost));
      (run == 0 ? first : second) = std::move(h);
    }
    CHECK(compare(std::string(op_name(op)) + " run 2 vs run 1", second, first, Tol{0, 0}) == 0);
  }
}

using ColGeometry = ReduceGeometry;

// The split launch (a column per lane, reduce.cuh) and the looped one (4 columns per
// lane) sum in the frame's order, so they must give the same bits: split or looped
// (scratch none or 4096 bytes: looped; 40000: a few column tiles per launch; 8 MiB),
// float4-aligned or not, partial 32-column tiles, and with zero rows appended (the padded
// input's sums are the unpadded input's bits).
TEST_CASE("cuda reduce_sum columns: split and looped launches give the same bits, padded or not") {
  TG_REQUIRE_GPU();
  const ColGeometry shapes[] = {{1, 16384, 1024}, {1, 129, 1024}, {1, 20000, 1024}, {1, 5000, 130},
                                {1, 100000, 3},   {1, 4097, 513},  {300, 300, 4},     {3, 500, 7},
                                {2, 300, 4100},   {1, 70000, 33},  {5, 1000, 31},     {1, 128, 1024},
                                {2, 1, 9},        {4, 4096, 65},   {1, 16385, 96}};
  const size_t scratch_sizes[] = {0, 4096, 40000, size_t{8} << 20};
  uint64_t seed = 31000;
  for (const ColGeometry& g : shapes) {
    const std::vector<float> x = random_vector(g.outer * g.len * g.inner, seed++);
    std::vector<float> want(static_cast<size_t>(g.outer * g.inner));
    kernels::cpu_reduce_sum(x.data(), want.data(), g.outer, g.len, g.inner);
    const std::vector<float> looped = gpu_reduce(x, g, false, 0);
    const std::string name = fmt::format("[{}, {}, {}]", g.outer, g.len, g.inner);
    CHECK(compare("reduce_sum " + name + " looped vs CPU", looped, want, Tol{1e-5, 1e-5}) == 0);
    for (size_t bytes : scratch_sizes)
      for (bool unaligned : {false, true}) {
        const std::string what = fmt::format("reduce_sum {} unaligned={} scratch={}", name, unaligned, bytes);
        INFO(what);
        CHECK(compare(what + " vs looped", gpu_reduce(x, g, unaligned, bytes), looped, Tol{0, 0}) == 0);
        // Zero rows appended: 1 (a partial tile), 4096 - len % 4096 (to a whole number of
        // tiles per group) and 8192 (more tiles in every group than before).
        for (int64_t k : {int64_t{1}, 4096 - g.len % 4096, int64_t{8192}}) {
          if (g.outer * (g.len + k) * g.inner > (int64_t{1} << 24)) continue;
          const ColGeometry gp{g.outer, g.len + k, g.inner};
          CHECK(compare(fmt::format("{} + {} zero rows vs looped unpadded", what, k),
                        gpu_reduce(pad_rows(x, g, k), gp, unaligned, bytes), looped, Tol{0, 0}) == 0);
        }
      }
  }
}

// col_plan, the host side of launch_reduce_cols: split or looped, in which tiles, and
// how many column tiles go in one launch. No device needed.
TEST_CASE("reduce_sum columns: col_plan splits only few column tiles with scratch") {
  using kernels::cuda::detail::col_plan;
  using kernels::cuda::detail::ColPlan;
  const size_t kMiB8 = size_t{8} << 20;
  // tg-kernels' case on an H200 (132 SMs): 32 tiles of 32 columns, 32 block partials.
  ColPlan p = col_plan(1, 16384, 1024, kMiB8, 132);
  CHECK(p.split);
  CHECK(p.width == 32);
  CHECK(p.n_ct == 32);
  CHECK(p.nb == 32);
  CHECK(p.per_launch == int64_t{kMiB8 / (32 * 32 * 8)});
  // Not split, so the looped kernel in 128-column tiles: no scratch, scratch too small for
  // one 128-column tile's partials (32 KiB at 32 partials), one block partial (len <= 128),
  // many tiles.
  for (const ColPlan& q : {col_plan(1, 16384, 1024, 0, 132), col_plan(1, 16384, 1024, 32767, 132),
                           col_plan(1, 128, 1024, kMiB8, 132), col_plan(1, 16384, 128 * 528, kMiB8, 132)}) {
    CHECK_FALSE(q.split);
    CHECK(q.width == 128);
    CHECK(q.per_launch == 0x7fffffff);
  }
  // Just enough scratch for one 128-column tile: 4 of the split launch's 32-column tiles.
  p = col_plan(1, 16384, 1024, 32768, 132);
  CHECK(p.split);
  CHECK(p.per_launch == 4);
  // Partial tiles: 130 columns are 5 tiles of 32 (2 of 128); 129 rows are 2 block partials.
  p = col_plan(3, 129, 130, kMiB8, 132);
  CHECK(p.split);
  CHECK(p.n_ct == 5);
  CHECK(p.nb == 2);
}

TEST_CASE("reduce_sum columns: col_tile_outputs covers a run of 32-column tiles") {
  using kernels::cuda::detail::col_tile_outputs;
  int64_t first = -1, end = -1;
  // inner 33: 2 tiles per outer index, the second of one column.
  col_tile_outputs(2, 33, 1, 2, 32, first, end);  // outer 0's column 32, outer 1's 0..31
  CHECK(first == 32);
  CHECK(end == 65);
  col_tile_outputs(2, 33, 0, 6, 32, first, end);  // all of 3 outer indices
  CHECK(first == 0);
  CHECK(end == 99);
  col_tile_outputs(32, 1024, 4, 4, 32, first, end);  // tiles 4..7 of [16384, 1024]
  CHECK(first == 128);
  CHECK(end == 256);
  col_tile_outputs(1, 7, 2, 1, 128, first, end);  // 128-column tiles as before
  CHECK(first == 14);
  CHECK(end == 21);
}

}  // namespace tg::testing
