#include "kernels/thread_group.h"

#include <fmt/format.h>

#include <condition_variable>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace tg {

struct ThreadGroup::State {
  explicit State(int n) : world(n), in(static_cast<size_t>(n)), count(static_cast<size_t>(n)) {}

  // Blocks until every rank has arrived (a barrier of one generation), or throws once aborted.
  void arrive_and_wait(std::unique_lock<std::mutex>& lock) {
    throw_if_aborted();
    const uint64_t gen = generation;
    if (++arrived == world) {
      arrived = 0;
      ++generation;
      cv.notify_all();
    } else {
      cv.wait(lock, [&] { return generation != gen || aborted; });
    }
    throw_if_aborted();
  }
  void throw_if_aborted() const {
    if (aborted) throw std::runtime_error("all_reduce: the thread group was aborted: " + why);
  }

  const int world;
  std::mutex m;
  std::condition_variable cv;
  int arrived = 0;
  uint64_t generation = 0;
  bool aborted = false;
  std::string why;
  // What each rank posted for the collective in progress.
  std::vector<const float*> in;
  std::vector<int64_t> count;
};

namespace {

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(std::shared_ptr<ThreadGroup::State> s, int rank) : s_(std::move(s)), rank_(rank) {}
  int rank() const override { return rank_; }
  int world_size() const override { return s_->world; }
  std::string kind() const override { return "threads"; }
  bool on_host() const override { return true; }

  void all_reduce_mean(const float* in, float* out, int64_t n, void* stream) override {
    (void)stream;
    ThreadGroup::State& s = *s_;
    std::unique_lock<std::mutex> lock(s.m);
    s.in[static_cast<size_t>(rank_)] = in;
    s.count[static_cast<size_t>(rank_)] = n;
    s.arrive_and_wait(lock);
    for (int r = 0; r < s.world; ++r)
      if (s.count[static_cast<size_t>(r)] != n) {
        // Every rank sees the same counts and throws alike; no rank is left waiting.
        throw std::runtime_error(fmt::format(
            "all_reduce: rank {} reduces {} elements but rank {} reduces {}; every rank must issue the same "
            "collectives in the same order (build every rank's model with the same shapes and bucket size)",
            rank_, n, r, s.count[static_cast<size_t>(r)]));
      }
    // Every rank reads every input before any rank writes its output (which may be its input).
    lock.unlock();
    scratch_.resize(static_cast<size_t>(n));
    const float world = static_cast<float>(s.world);
    for (int64_t i = 0; i < n; ++i) {
      float sum = s.in[0][i];
      for (int r = 1; r < s.world; ++r) sum += s.in[static_cast<size_t>(r)][i];
      scratch_[static_cast<size_t>(i)] = sum / world;
    }
    lock.lock();
    s.arrive_and_wait(lock);
    lock.unlock();
    for (int64_t i = 0; i < n; ++i) out[i] = scratch_[static_cast<size_t>(i)];
  }

 private:
  std::shared_ptr<ThreadGroup::State> s_;
  int rank_;
  std::vector<float> scratch_;
};

}  // namespace

ThreadGroup::ThreadGroup(int world_size) {
  if (world_size < 1)
    throw std::invalid_argument(fmt::format("ThreadGroup: world_size = {}; give at least one rank", world_size));
  state_ = std::make_shared<State>(world_size);
}

ThreadGroup::~ThreadGroup() = default;

int ThreadGroup::world_size() const { return state_->world; }

std::shared_ptr<Communicator> ThreadGroup::communicator(int rank) {
  if (rank < 0 || rank >= state_->world)
    throw std::invalid_argument(
        fmt::format("ThreadGroup::communicator: rank {} is outside 0..{}", rank, state_->world - 1));
  return std::make_shared<ThreadCommunicator>(state_, rank);
}

void ThreadGroup::abort(const std::string& why) {
  std::lock_guard<std::mutex> lock(state_->m);
  if (state_->aborted) return;
  state_->aborted = true;
  state_->why = why;
  state_->cv.notify_all();
}

void run_thread_ranks(ThreadGroup& group, const std::function<void(int rank)>& body) {
  const int n = group.world_size();
  std::vector<std::exception_ptr> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = std::current_exception();
        group.abort(fmt::format("rank {} failed: {}", r, e.what()));
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
        group.abort(fmt::format("rank {} failed", r));
      }
    });
  for (std::thread& t : threads) t.join();
  // A rank that failed on its own is the cause; the others report the abort it caused. The
  // cause is rethrown as it was thrown (a GraphError stays one: bad input, exit 2 in the tools).
  for (int r = 0; r < n; ++r) {
    if (!errors[static_cast<size_t>(r)]) continue;
    try {
      std::rethrow_exception(errors[static_cast<size_t>(r)]);
    } catch (const std::exception& e) {
      if (std::string(e.what()).find("the thread group was aborted") != std::string::npos) continue;
    } catch (...) {
    }
    std::rethrow_exception(errors[static_cast<size_t>(r)]);
  }
  for (int r = 0; r < n; ++r)
    if (errors[static_cast<size_t>(r)]) std::rethrow_exception(errors[static_cast<size_t>(r)]);
}

}  // namespace tg
