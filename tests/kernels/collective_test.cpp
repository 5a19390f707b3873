// The collective of data parallelism on the CPU (kernels/thread_group.h): the mean over
// thread ranks by its definition, in place or not, through the backend's all_reduce op;
// a backend in no group; and the failures that must not hang: ranks that disagree on a
// collective's size, and a rank that fails before its collective.
#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include "kernels/backend.h"
#include "kernels/communicator.h"
#include "kernels/thread_group.h"

namespace tg {
namespace {

// Rank r's element i: distinct per rank and element, with fractions so that the sum's order
// and the division show in the bits.
float value_of(int rank, int64_t i) { return 0.1f * static_cast<float>(rank + 1) + 1.0f / static_cast<float>(i + 3); }

kernels::OpCall all_reduce_call(float* in, float* out, int64_t n) {
  static const Attrs none;
  kernels::OpCall c;
  c.op = OpKind::all_reduce;
  c.attrs = &none;
  c.num_inputs = 1;
  c.in[0] = {in, Shape{n}, DType::F32};
  c.out = {out, Shape{n}, DType::F32};
  return c;
}

}  // namespace

TEST_CASE("thread group: all_reduce is the sum over the ranks in rank order, divided by their count") {
  for (int world : {1, 2, 3, 4}) {
    for (bool in_place : {true, false}) {
      CAPTURE(world);
      CAPTURE(in_place);
      const int64_t n = 37;
      ThreadGroup group(world);
      std::vector<std::vector<float>> results(static_cast<size_t>(world));
      run_thread_ranks(group, [&](int rank) {
        auto be = make_cpu_backend();
        be->set_communicator(group.communicator(rank));
        CHECK(be->world_size() == world);
        std::vector<float> in(static_cast<size_t>(n)), out(static_cast<size_t>(n), -1.0f);
        for (int64_t i = 0; i < n; ++i) in[static_cast<size_t>(i)] = value_of(rank, i);
        // Twice: the group is reusable, one collective after another.
        for (int rep = 0; rep < 2; ++rep) {
          std::vector<float> x = in;
          be->run(all_reduce_call(x.data(), in_place ? x.data() : out.data(), n));
          results[static_cast<size_t>(rank)] = in_place ? x : out;
        }
      });
      for (int64_t i = 0; i < n; ++i) {
        float sum = value_of(0, i);
        for (int r = 1; r < world; ++r) sum += value_of(r, i);
        const float want = sum / static_cast<float>(world);
        for (int r = 0; r < world; ++r) CHECK(results[static_cast<size_t>(r)][static_cast<size_t>(i)] == want);
      }
    }
  }
}

TEST_CASE("thread group: a backend in no group is a group of one") {
  auto be = make_cpu_backend();
  CHECK(be->communicator() == nullptr);
  CHECK(be->world_size() == 1);
  std::vector<float> x = {1.5f, -2.25f, 3.0f}, y(3, 0.0f);
  be->run(all_reduce_call(x.data(), y.data(), 3));
  CHECK(y == x);
}

TEST_CASE("thread group: ranks that disagree on a collective's size all fail, none hangs") {
  ThreadGroup group(3);
  CHECK_THROWS_WITH_AS(run_thread_ranks(group,
                                        [&](int rank) {
                                          auto comm = group.communicator(rank);
                                          std::vector<float> x(static_cast<size_t>(rank == 1 ? 5 : 4), 1.0f);
                                          comm->all_reduce_mean(x.data(), x.data(), static_cast<int64_t>(x.size()),
                                                                nullptr);
                                        }),
                       doctest::Contains("every rank must issue the same collectives"), std::runtime_error);
}

TEST_CASE("thread group: a rank that fails before its collective aborts the others, and its error is the one thrown") {
  ThreadGroup group(4);
  CHECK_THROWS_WITH_AS(run_thread_ranks(group,
                                        [&](int rank) {
                                          auto comm = group.communicator(rank);
                                          if (rank == 2) throw std::invalid_argument("rank two's bad input");
                                          std::vector<float> x(8, 1.0f);
                                          comm->all_reduce_mean(x.data(), x.data(), 8, nullptr);
                                        }),
                       "rank two's bad input", std::invalid_argument);
  // The group stays aborted: a later collective fails at once instead of waiting.
  std::vector<float> x(2, 1.0f);
  CHECK_THROWS_WITH_AS(group.communicator(0)->all_reduce_mean(x.data(), x.data(), 2, nullptr),
                       doctest::Contains("aborted"), std::runtime_error);
}

TEST_CASE("thread group: bad sizes and a communicator of the other memory are refused") {
  CHECK_THROWS_AS(ThreadGroup(0), std::invalid_argument);
  ThreadGroup group(2);
  CHECK_THROWS_AS(group.communicator(2), std::invalid_argument);
  struct GpuLike final : Communicator {
    int rank() const override { return 0; }
    int world_size() const override { return 1; }
    std::string kind() const override { return "gpu-like"; }
    bool on_host() const override { return false; }
    void all_reduce_mean(const float*, float*, int64_t, void*) override {}
  };
  auto be = make_cpu_backend();
  CHECK_THROWS_WITH_AS(be->set_communicator(std::make_shared<GpuLike>()), doctest::Contains("GPU memory"),
                       std::invalid_argument);
}

}  // namespace tg
