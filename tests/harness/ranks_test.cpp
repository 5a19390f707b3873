// The launcher's parts that run without GPUs (experiments/harness/ranks.h): torchrun's
// variables read or refused, the NCCL ids' hand-over from rank 0 through the launch's folder,
// and what --gpus does before it starts anything.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "experiments/harness/experiment.h"
#include "experiments/harness/ranks.h"

namespace tg::harness {
namespace {

// Sets (or unsets, with nullopt) an environment variable for its lifetime.
class EnvVar {
 public:
  EnvVar(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) setenv(name, value->c_str(), 1);
    else unsetenv(name);
  }
  ~EnvVar() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }
  EnvVar(const EnvVar&) = delete;
  EnvVar& operator=(const EnvVar&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::optional<int> launch(std::vector<std::string> args) {
  args.insert(args.begin(), "tg-train");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return launch_gpu_ranks(static_cast<int>(argv.size()), argv.data());
}

}  // namespace

TEST_CASE("ranks: torchrun's variables, read or refused") {
  {
    EnvVar rank("RANK", std::nullopt);
    CHECK_FALSE(rank_env().launched);
  }
  EnvVar rank("RANK", "1"), world("WORLD_SIZE", "4"), local("LOCAL_RANK", "1");
  const RankEnv env = rank_env();
  CHECK(env.launched);
  CHECK(env.rank == 1);
  CHECK(env.world == 4);
  CHECK(env.local_rank == 1);
  {
    EnvVar bad("RANK", "4");  // past WORLD_SIZE - 1
    CHECK_THROWS_WITH_AS(rank_env(), doctest::Contains("RANK=4 is not a whole number in 0..3"), UsageError);
  }
  {
    EnvVar missing("WORLD_SIZE", std::nullopt);
    CHECK_THROWS_WITH_AS(rank_env(), doctest::Contains("WORLD_SIZE is not set"), UsageError);
  }
  // A rank already: --gpus starts nothing.
  CHECK_FALSE(launch({"--gpus", "2"}).has_value());
}

TEST_CASE("ranks: --gpus refused or passed through before anything starts") {
  EnvVar rank("RANK", std::nullopt);
  CHECK_FALSE(launch({"--device", "cpu"}).has_value());
  CHECK_FALSE(launch({"--gpus", "1"}).has_value());  // one GPU: the ordinary run
  CHECK_FALSE(launch({"--gpus", "4", "--help"}).has_value());
  CHECK(launch({"--gpus", "two"}) == std::optional<int>(kExitUsage));
  CHECK(launch({"--gpus=0"}) == std::optional<int>(kExitUsage));
  CHECK(launch({"--gpus", "1024"}) == std::optional<int>(kExitUsage));  // no machine here has 1024 GPUs
}

TEST_CASE("ranks: rank 0 publishes the ids whole, the others read them") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "tg-ranks-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  EnvVar folder("TG_RANK_DIR", dir.string());
  const std::string bytes("\x01\x00\xff nccl id", 11);
  std::string got0, got1;
  std::thread reader([&] { got1 = share_from_rank0(RankEnv{true, 1, 2, 1}, "ids", [] { return std::string("wrong"); }); });
  got0 = share_from_rank0(RankEnv{true, 0, 2, 0}, "ids", [&] { return bytes; });
  reader.join();
  CHECK(got0 == bytes);
  CHECK(got1 == bytes);
  // A rank whose rank 0 never publishes gives up with a message.
  CHECK_THROWS_WITH_AS(share_from_rank0(RankEnv{true, 1, 2, 1}, "never", [] { return std::string(); }, 0.05),
                       doctest::Contains("rank 0 did not publish never"), std::runtime_error);
  std::filesystem::remove_all(dir);
  // Outside a launch there is no folder to meet in.
  EnvVar none("TG_RANK_DIR", std::nullopt);
  CHECK_THROWS_WITH_AS(share_from_rank0(RankEnv{}, "ids", [] { return std::string(); }),
                       doctest::Contains("not a rank of a launch"), std::runtime_error);
}

}  // namespace tg::harness
