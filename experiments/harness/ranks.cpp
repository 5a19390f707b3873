#include "experiments/harness/ranks.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "experiments/harness/experiment.h"
#include "kernels/device_info.h"

namespace tg::harness {

namespace {

constexpr const char* kRankDirVariable = "TG_RANK_DIR";

int env_int(const char* name, int lo, int hi) {
  const char* v = std::getenv(name);
  if (!v) throw UsageError(fmt::format("{} is not set, but RANK is: a launcher sets RANK, WORLD_SIZE and LOCAL_RANK "
                                       "together", name));
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (end == v || *end != '\0' || n < lo || n > hi)
    throw UsageError(fmt::format("{}={} is not a whole number in {}..{}", name, v, lo, hi));
  return static_cast<int>(n);
}

// The value of `--flag V` or `--flag=V` in argv, if given.
std::optional<std::string> flag_value(int argc, char** argv, const std::string& flag) {
  std::optional<std::string> out;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == flag && i + 1 < argc) out = argv[++i];
    else if (a.rfind(flag + "=", 0) == 0) out = a.substr(flag.size() + 1);
  }
  return out;
}

// argv for rank r: --device r in place of the given one (the harness then makes, reports and
// times this rank's GPU only), and for r > 0 the report files renamed FILE.rank<r>.
std::vector<std::string> rank_args(int argc, char** argv, int r) {
  std::vector<std::string> out;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--device" && i + 1 < argc) {
      ++i;
      continue;
    }
    if (a.rfind("--device=", 0) == 0) continue;
    out.push_back(a);
  }
  out.push_back("--device");
  out.push_back(std::to_string(r));
  if (r == 0) return out;
  for (size_t i = 1; i < out.size(); ++i)
    for (const char* flag : {"--json", "--csv", "--trace"}) {
      const std::string f = flag;
      if (out[i] == f && i + 1 < out.size()) out[i + 1] += fmt::format(".rank{}", r);
      else if (out[i].rfind(f + "=", 0) == 0) out[i] += fmt::format(".rank{}", r);
    }
  return out;
}

pid_t start_rank(const std::vector<std::string>& args, int rank, int world, const std::string& dir) {
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(fmt::format("--gpus: fork failed: {}", std::strerror(errno)));
  if (pid > 0) return pid;
  // The child: torchrun's variables, NVLink multicast off, then this very program again.
  setenv("RANK", std::to_string(rank).c_str(), 1);
  setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
  setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  // Every connection made when the communicator is, not at a collective's first call: that
  // call may be inside the static executor's stream capture, where setting one up cannot run.
  setenv("NCCL_RUNTIME_CONNECT", "0", 0);
  setenv(kRankDirVariable, dir.c_str(), 1);
  std::vector<char*> cargs;
  for (const std::string& a : args) cargs.push_back(const_cast<char*>(a.c_str()));
  cargs.push_back(nullptr);
  execv("/proc/self/exe", cargs.data());
  std::fprintf(stderr, "--gpus: rank %d could not start %s: %s\n", rank, args[0].c_str(), std::strerror(errno));
  _exit(kExitFailure);
}

int exit_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return kExitFailure;
}

}  // namespace

RankEnv rank_env() {
  RankEnv env;
  if (!std::getenv("RANK")) return env;
  env.launched = true;
  env.world = env_int("WORLD_SIZE", 1, 1 << 16);
  env.rank = env_int("RANK", 0, env.world - 1);
  env.local_rank = env_int("LOCAL_RANK", 0, env.world - 1);
  return env;
}

std::optional<int> launch_gpu_ranks(int argc, char** argv) {
  if (std::getenv("RANK")) return std::nullopt;  // a rank already
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) return std::nullopt;
  const std::optional<std::string> text = flag_value(argc, argv, "--gpus");
  if (!text) return std::nullopt;
  const std::string tool = std::filesystem::path(argv[0]).filename().string();
  char* end = nullptr;
  const long n = std::strtol(text->c_str(), &end, 10);
  if (text->empty() || *end != '\0' || n < 1 || n > 1024) {
    std::fprintf(stderr, "%s: --gpus %s: give the number of GPUs to train on, a whole number from 1\n", tool.c_str(),
                 text->c_str());
    return kExitUsage;
  }
  if (n == 1) return std::nullopt;  // one GPU: the ordinary run, no launcher
  const size_t have = list_gpus().size();
  if (have < static_cast<size_t>(n)) {
    const std::string fix = have < 2 ? std::string("use --ranks N --device cpu for thread ranks of the CPU backend")
                                     : fmt::format("run with --gpus {} or fewer", have);
    std::fprintf(stderr, "%s: --gpus %ld asks for %ld GPUs, but this machine has %zu; %s, or run on a machine with "
                 "%ld GPUs\n", tool.c_str(), n, n, have, fix.c_str(), n);
    return kExitUsage;
  }
  std::string dir = (std::filesystem::temp_directory_path() / "tg-ranks-XXXXXX").string();
  if (!mkdtemp(dir.data())) {
    std::fprintf(stderr, "%s: --gpus: cannot make a folder for the NCCL ids: %s\n", tool.c_str(), std::strerror(errno));
    return kExitFailure;
  }
  std::vector<pid_t> pids;
  std::error_code ec;
  try {
    for (int r = 0; r < n; ++r) pids.push_back(start_rank(rank_args(argc, argv, r), r, static_cast<int>(n), dir));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", tool.c_str(), e.what());
    for (pid_t p : pids) kill(p, SIGTERM);
    for (pid_t p : pids) waitpid(p, nullptr, 0);
    std::filesystem::remove_all(dir, ec);
    return kExitFailure;
  }
  // Ctrl-C reaches the ranks too (one process group): the launcher outlives them, to return
  // their status and remove the ids' folder. Set after the forks, so the ranks keep SIGINT.
  signal(SIGINT, SIG_IGN);
  // Wait for every rank; when one fails the others would wait for it in a collective forever,
  // so they are stopped.
  int result = kExitOk;
  size_t left = pids.size();
  while (left > 0) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    --left;
    const int code = exit_status(status);
    if (code != kExitOk && result == kExitOk) {
      result = code;
      for (pid_t other : pids)
        if (other != pid) kill(other, SIGTERM);
    }
  }
  std::filesystem::remove_all(dir, ec);
  return result;
}

std::string share_from_rank0(const RankEnv& env, const std::string& name, const std::function<std::string()>& make,
                             double timeout_s) {
  const char* dir = std::getenv(kRankDirVariable);
  if (!env.launched || !dir)
    throw std::runtime_error(fmt::format("share_from_rank0 {}: not a rank of a launch (no {}); start the program "
                                         "with --gpus N", name, kRankDirVariable));
  const std::filesystem::path path = std::filesystem::path(dir) / name;
  if (env.rank == 0) {
    const std::string bytes = make();
    const std::filesystem::path tmp = path.string() + ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      if (!out) throw std::runtime_error(fmt::format("share_from_rank0: cannot write {}", tmp.string()));
    }
    std::filesystem::rename(tmp, path);  // whole or absent: the others never read a part
    return bytes;
  }
  const auto start = std::chrono::steady_clock::now();
  while (!std::filesystem::exists(path)) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > timeout_s)
      throw std::runtime_error(fmt::format("rank {}: rank 0 did not publish {} within {} s", env.rank, name, timeout_s));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace tg::harness
