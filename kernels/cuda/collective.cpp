// NCCL through dlopen (see collective.h): the few entry points used, each call checked
// by TG_NCCL_CHECK (file, line, call, NCCL's error name and text, the device), the
// communicator held by an RAII owner.
#include "kernels/cuda/collective.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <nccl.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/raii.h"

namespace tg {

namespace {

static_assert(sizeof(ncclUniqueId) == sizeof(NcclUniqueId), "NcclUniqueId holds ncclUniqueId's bytes");

struct NcclApi {
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitRank) comm_init_rank = nullptr;
  decltype(&ncclCommDestroy) comm_destroy = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;
  decltype(&ncclGetVersion) get_version = nullptr;
  std::string missing;  // why the library is not usable; empty when it is
};

NcclApi load_nccl() {
  NcclApi api;
  void* lib = nullptr;
  std::string tried;
  for (const char* path : {TWOGRAPH_NCCL_LIBRARY, "libnccl.so.2"}) {
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib) break;
    const char* err = dlerror();
    tried += fmt::format("{}{} ({})", tried.empty() ? "" : ", ", path, err ? err : "not found");
  }
  if (!lib) {
    api.missing = "libnccl.so.2 did not load: tried " + tried +
                  "; install NCCL 2.10 or later or put its lib/ on LD_LIBRARY_PATH";
    return api;
  }
  // The handle stays open for the life of the process, as a linked library would.
  auto sym = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
    if (!fn && api.missing.empty()) api.missing = fmt::format("libnccl.so.2 has no {}; NCCL 2.10 or later is needed", name);
  };
  sym(api.get_unique_id, "ncclGetUniqueId");
  sym(api.comm_init_rank, "ncclCommInitRank");
  sym(api.comm_destroy, "ncclCommDestroy");
  sym(api.all_reduce, "ncclAllReduce");
  sym(api.error_string, "ncclGetErrorString");
  sym(api.get_version, "ncclGetVersion");
  return api;
}

const NcclApi& nccl() {
  static const NcclApi api = load_nccl();
  return api;
}

const NcclApi& nccl_or_throw() {
  const NcclApi& api = nccl();
  if (!api.missing.empty()) throw std::runtime_error("NCCL: " + api.missing);
  return api;
}

const char* result_name(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "ncclSuccess";
    case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    case ncclInProgress: return "ncclInProgress";
    default: return "ncclResultUnknown";
  }
}

std::string nccl_message(ncclResult_t r, const char* call, const char* file, int line) {
  int device = -1;
  if (cudaGetDevice(&device) != cudaSuccess) cudaGetLastError();
  const NcclApi& api = nccl();
  return fmt::format("{}:{}: {} failed: {} ({}) on device {}", file, line, call, result_name(r),
                     api.error_string ? api.error_string(r) : "no error text", device);
}

[[noreturn]] void throw_nccl(ncclResult_t r, const char* call, const char* file, int line) {
  throw CudaError(nccl_message(r, call, file, line));
}

}  // namespace

}  // namespace tg

#define TG_NCCL_CHECK(call)                                                                  \
  do {                                                                                       \
    const ncclResult_t tg_nr_ = (call);                                                      \
    if (tg_nr_ != ncclSuccess) ::tg::throw_nccl(tg_nr_, #call, __FILE__, __LINE__);          \
  } while (0)

#define TG_NCCL_CHECK_NOTHROW(call)                                                          \
  do {                                                                                       \
    const ncclResult_t tg_nr_ = (call);                                                      \
    if (tg_nr_ != ncclSuccess)                                                               \
      std::fprintf(stderr, "%s\n", ::tg::nccl_message(tg_nr_, #call, __FILE__, __LINE__).c_str()); \
  } while (0)

namespace tg {

namespace {

void destroy_comm(ncclComm_t c) noexcept { TG_NCCL_CHECK_NOTHROW(nccl().comm_destroy(c)); }
using NcclComm = cuda::UniqueHandle<ncclComm_t, destroy_comm>;

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(CudaBackend& backend, int rank, int world, const NcclUniqueId& id)
      : rank_(rank), world_(world), device_(backend.device()) {
    const NcclApi& api = nccl_or_throw();
    if (world < 1 || rank < 0 || rank >= world)
      throw std::invalid_argument(fmt::format("NCCL communicator: rank {} of world size {}; give 0 <= rank < world",
                                              rank, world));
    TG_CUDA_CHECK(cudaSetDevice(device_));
    ncclUniqueId raw;
    std::memcpy(&raw, id.data(), sizeof(raw));
    ncclComm_t c = nullptr;
    TG_NCCL_CHECK(api.comm_init_rank(&c, world, raw, rank));
    comm_ = NcclComm(c);
    stream_ = cuda::Stream::create();
    forked_ = cuda::Event::create(cudaEventDisableTiming);
    joined_ = cuda::Event::create(cudaEventDisableTiming);
  }
  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  std::string kind() const override { return "nccl"; }
  bool on_host() const override { return false; }

  void all_reduce_mean(const float* in, float* out, int64_t n, void* stream) override {
    const cudaStream_t s = static_cast<cudaStream_t>(stream);
    // NCCL's kernels on the communication stream, after everything `s` holds, and `s` after them.
    forked_.record(s);
    TG_CUDA_CHECK(cudaStreamWaitEvent(stream_.get(), forked_.get(), 0));
    TG_NCCL_CHECK(nccl().all_reduce(in, out, static_cast<size_t>(n), ncclFloat32, ncclAvg, comm_.get(), stream_.get()));
    joined_.record(stream_.get());
    TG_CUDA_CHECK(cudaStreamWaitEvent(s, joined_.get(), 0));
  }

 private:
  int rank_, world_, device_;
  NcclComm comm_;
  cuda::Stream stream_;
  cuda::Event forked_, joined_;
};

}  // namespace

bool nccl_available(std::string* why) {
  const NcclApi& api = nccl();
  if (why) *why = api.missing;
  return api.missing.empty();
}

NcclUniqueId nccl_unique_id() {
  const NcclApi& api = nccl_or_throw();
  ncclUniqueId raw;
  TG_NCCL_CHECK(api.get_unique_id(&raw));
  NcclUniqueId id;
  std::memcpy(id.data(), &raw, sizeof(raw));
  return id;
}

std::shared_ptr<Communicator> make_nccl_communicator(CudaBackend& backend, int rank, int world, const NcclUniqueId& id) {
  return std::make_shared<NcclCommunicator>(backend, rank, world, id);
}

}  // namespace tg
