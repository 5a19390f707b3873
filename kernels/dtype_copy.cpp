#include "kernels/dtype_copy.h"

#include <algorithm>
#include <thread>

#include "graph/float_formats.h"

namespace tg {

void copy_to_device_as(Backend& be, void* dst, const std::vector<float>& host, DType dt) {
  if (dt == DType::F32) return be.copy_to_device(dst, host.data(), host.size() * sizeof(float));
  const size_t bytes = host.size() * static_cast<size_t>(dtype_size(dt));
  std::vector<unsigned char> stored(bytes);
  store_as_dtype(host.data(), host.size(), dt, stored.data());
  be.copy_to_device(dst, stored.data(), bytes);
}

std::vector<float> copy_to_host_from(Backend& be, const void* src, int64_t n, DType dt) {
  std::vector<float> host;
  std::vector<unsigned char> staging;
  copy_to_host_into(be, src, n, dt, host, staging);
  return host;
}

void copy_to_host_into(Backend& be, const void* src, int64_t n, DType dt, std::vector<float>& out,
                       std::vector<unsigned char>& staging) {
  out.resize(static_cast<size_t>(n));
  if (dt == DType::F32) {
    be.copy_to_host(out.data(), src, out.size() * sizeof(float));
    return;
  }
  const size_t bytes = out.size() * static_cast<size_t>(dtype_size(dt));
  if (staging.size() < bytes) staging.resize(bytes);
  be.copy_to_host(staging.data(), src, bytes);
  // One core widens a few GB/s: the logits of a language model (tens of millions of values)
  // would take tens of milliseconds on it.
  const int threads = static_cast<int>(std::min(8u, std::max(1u, std::thread::hardware_concurrency())));
  load_from_dtype_parallel(staging.data(), out.size(), dt, out.data(), threads);
}

void load_from_dtype_parallel(const void* src, size_t n, DType dt, float* dst, int threads) {
  if (threads <= 1 || n < kParallelWidenElements) return load_from_dtype(src, n, dt, dst);
  const size_t es = static_cast<size_t>(dtype_size(dt));
  const auto* bytes = static_cast<const unsigned char*>(src);
  const size_t per = (n + static_cast<size_t>(threads) - 1) / static_cast<size_t>(threads);
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(threads));  // only a thread's start can throw below
  size_t started_to = std::min(per, n);  // [0, per) is the caller's; threads take per-sized chunks after it
  try {
    while (started_to < n) {
      const size_t begin = started_to, count = std::min(per, n - begin);
      pool.emplace_back([=] { load_from_dtype(bytes + begin * es, count, dt, dst + begin); });
      started_to = begin + count;
    }
  } catch (...) {  // no more threads to be had: the caller widens the chunks none took
  }
  load_from_dtype(src, std::min(per, n), dt, dst);
  if (started_to < n) load_from_dtype(bytes + started_to * es, n - started_to, dt, dst + started_to);
  for (std::thread& th : pool) th.join();
}

}  // namespace tg
