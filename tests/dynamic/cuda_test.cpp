// The dynamic executor on CUDA (label gpu): CUDA dynamic vs CPU dynamic within
// tolerance (the kernels differ: cuBLAS, float accumulation), CUDA dynamic run
// twice bitwise, and zero raw allocations per iteration after one warm-up with
// the caching and pool allocators. Skips (TG_SKIP) without a device.
#include <doctest/doctest.h>

#include <cmath>

#include "dynamic/trainer.h"
#include "kernels/cuda/cuda_backend.h"
#include "tests/common/models.h"
#include "tests/dynamic/dynamic_util.h"
#include "tests/gpu_skip.h"

namespace tg {
using namespace tg::testing;

namespace {

struct Run {
  std::vector<float> losses;
  std::vector<std::vector<float>> params;
  std::vector<int64_t> raw_allocs;  // after each step
};

Run train(const ModelFn& model, Backend& be, const std::string& allocator, const Feeds& feeds, int steps = 5) {
  DynamicOptions o;
  o.seed = kSeed;
  DynamicTrainer tr(model, be, allocator, o);
  Run r;
  for (int s = 0; s < steps; ++s) {
    r.losses.push_back(tr.step(feeds));
    r.raw_allocs.push_back(tr.allocator_stats().raw_allocs);
  }
  for (const std::string& n : tr.parameter_names()) r.params.push_back(tr.parameter(n));
  return r;
}

void check_model(const ModelFn& model) {
  Reference ref(model);
  auto cpu = make_cpu_backend();
  auto gpu = make_cuda_backend(0, false);
  const Run c = train(model, *cpu, "caching", ref.feeds);
  const Run g1 = train(model, *gpu, "caching", ref.feeds);
  const Run g2 = train(model, *gpu, "caching", ref.feeds);
  for (size_t s = 0; s < c.losses.size(); ++s) {
    INFO("step " << s << ": cpu " << c.losses[s] << " cuda " << g1.losses[s]);
    CHECK(std::fabs(c.losses[s] - g1.losses[s]) <= 1e-4f + 1e-3f * std::fabs(c.losses[s]));
    CHECK(same_bits(g1.losses[s], g2.losses[s]));
  }
  REQUIRE(c.params.size() == g1.params.size());
  for (size_t i = 0; i < c.params.size(); ++i) {
    const long bad = first_mismatch(g1.params[i], c.params[i], 1e-4f, 1e-3f);
    INFO("parameter " << i << " first mismatch at " << bad
                      << (bad >= 0 ? ": cuda " + std::to_string(g1.params[i][static_cast<size_t>(bad)]) + " cpu " +
                                         std::to_string(c.params[i][static_cast<size_t>(bad)])
                                   : std::string()));
    CHECK(bad < 0);
    CHECK(same_bits(g1.params[i], g2.params[i]));
  }
  for (const char* alloc : {"caching", "pool"}) {
    const Run r = train(model, *gpu, alloc, ref.feeds);
    INFO(alloc << ": raw allocations after step 1 " << r.raw_allocs[0] << ", after step 5 " << r.raw_allocs.back());
    CHECK(r.raw_allocs.back() == r.raw_allocs[0]);
    CHECK(same_bits(r.losses, g1.losses));
  }
}

}  // namespace

TEST_CASE("cuda dynamic mlp: close to the CPU, bitwise run to run, no raw allocations after warm-up") {
  TG_REQUIRE_GPU();
  MlpConfig c = small_mlp();
  c.width = 64;
  check_model(mlp_model(c));
}

TEST_CASE("cuda dynamic transformer_block: close to the CPU, bitwise run to run") {
  TG_REQUIRE_GPU();
  check_model(transformer_model(small_transformer()));
}

TEST_CASE("cuda: the raw allocator calls cudaMalloc for every tensor, pool is refused on the CPU") {
  TG_REQUIRE_GPU();
  const ModelFn model = mlp_model(small_mlp());
  Reference ref(model);
  auto gpu = make_cuda_backend(0, false);
  DynamicOptions o;
  o.seed = kSeed;
  DynamicTrainer tr(model, *gpu, "raw", o);
  tr.step(ref.feeds);
  const AllocatorStats a = tr.allocator_stats();
  tr.step(ref.feeds);
  const AllocatorStats b = tr.allocator_stats();
  CHECK(b.raw_allocs - a.raw_allocs == b.allocs - a.allocs);
  auto cpu = make_cpu_backend();
  CHECK_THROWS_AS(make_allocator("pool", *cpu), std::invalid_argument);
}

}  // namespace tg
