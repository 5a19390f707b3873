// Data parallelism on the CUDA backend through NCCL (label gpu; skipped without a device).
// One GPU holds a world of one, which is what this test can run: the buckets' all_reduce
// through a real NCCL communicator, captured in the static executor's CUDA graph and
// launched eagerly by the dynamic one. The mean over one rank is the value itself, so both
// executors must equal each other and a run without data parallelism, bit for bit.
#include <doctest/doctest.h>

#include "tests/common/models.h"
#include "tests/gpu_skip.h"
#if __has_include("kernels/cuda/cuda_backend.h")
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/collective.h"
#define TG_TEST_HAVE_CUDA_BACKEND 1
#include "tests/static/data_parallel_util.h"
#endif

namespace tg {

#ifdef TG_TEST_HAVE_CUDA_BACKEND
TEST_CASE("data parallel on CUDA: a world of one through NCCL, captured and eager, equals no data parallelism") {
  TG_REQUIRE_GPU();
  std::string why;
  REQUIRE_MESSAGE(nccl_available(&why), why);
  const ModelFn model = testing::mlp_model(testing::mlp_config(8, 24, 32, 3, 6));
  std::vector<Feeds> feeds;
  const Graph g = build_training_graph(model);
  for (uint64_t i = 0; i < 3; ++i) feeds.push_back(testing::random_feeds(testing::input_shapes_of(g), 50 + 7 * i));
  auto joined = [] {
    auto be = std::make_shared<CudaBackend>(0, false);
    be->set_communicator(make_nccl_communicator(*be, 0, 1, nccl_unique_id()));
    return be;
  };
  for (bool graph : {true, false}) {
    CAPTURE(graph);
    testing::RunConfig plain;
    plain.use_cuda_graph = graph;
    testing::RunConfig dp = plain;
    dp.train.data_parallel.enabled = true;
    dp.train.data_parallel.bucket_bytes = 1024;  // several buckets
    const testing::RankState with =
        testing::train_rank(model, dp, joined(), joined(), feeds, 0, 1);
    const testing::RankState without = testing::train_rank(model, plain, std::make_shared<CudaBackend>(0, false),
                                                           std::make_shared<CudaBackend>(0, false), feeds, 0, 1);
    testing::check_ranks_agree({with});
    for (const auto& [name, values] : without.static_state) {
      INFO("state ", name);
      CHECK(testing::bitwise_diff(with.static_state.at(name), values) == "");
    }
  }
}
#endif

}  // namespace tg
