// ParallelMemcpy (kernels/parallel_memcpy.h): every byte lands where a plain
// memcpy puts it, for sizes around the 1 MiB hand-off and the 4 KiB slice
// rounding, at unaligned offsets, on 1..4 threads, for batches of buffers whose
// boundaries fall inside the threads' shares, and with callers on several
// threads sharing one pool.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "kernels/parallel_memcpy.h"

namespace {

std::vector<unsigned char> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<unsigned char> v(n);
  for (auto& b : v) b = static_cast<unsigned char>(rng() & 0xff);
  return v;
}

// Copies src[offset, offset + bytes) to dst + offset with `pool`; returns the
// index of the first wrong byte of dst (guard bytes included), or -1.
long long copy_and_check(tg::ParallelMemcpy& pool, size_t bytes, size_t offset, uint32_t seed,
                         tg::ParallelMemcpy::Stores stores = tg::ParallelMemcpy::Stores::cached) {
  const size_t guard = 64;
  const std::vector<unsigned char> src = random_bytes(bytes + offset + guard, seed);
  std::vector<unsigned char> dst(src.size(), 0xA5);
  std::vector<unsigned char> want = dst;
  std::memcpy(want.data() + offset, src.data() + offset, bytes);
  pool.copy(dst.data() + offset, src.data() + offset, bytes, stores);
  for (size_t i = 0; i < dst.size(); ++i)
    if (dst[i] != want[i]) return static_cast<long long>(i);
  return -1;
}

}  // namespace

TEST_CASE("ParallelMemcpy copies every size and offset like memcpy, on 1 to 4 threads, cached and streaming") {
  using Stores = tg::ParallelMemcpy::Stores;
  const size_t min = tg::ParallelMemcpy::kMinParallelBytes;
  const size_t sizes[] = {0, 1, 4095, 4096, min - 1, min, min + 1, min + 4096 * 3 + 13, (8u << 20) + 3};
  for (int threads = 1; threads <= 4; ++threads) {
    tg::ParallelMemcpy pool(threads);
    CHECK(pool.threads() == threads);
    uint32_t seed = 1;
    for (Stores stores : {Stores::cached, Stores::streaming})
      for (size_t bytes : sizes)
        for (size_t offset : {size_t{0}, size_t{3}, size_t{4093}}) {
          CAPTURE(threads);
          CAPTURE(static_cast<int>(stores));
          CAPTURE(bytes);
          CAPTURE(offset);
          CHECK(copy_and_check(pool, bytes, offset, seed++, stores) == -1);
        }
  }
}

TEST_CASE("ParallelMemcpy::copy_all copies a batch of buffers of odd sizes, split across threads, like memcpy") {
  // 9 buffers, 5 MiB and some in all: the 4 threads' shares start and end inside them.
  const size_t sizes[] = {1, 700000, 3, (1u << 20) + 5, 4096, 0, (2u << 20) + 777, 12345, (1u << 20) - 1};
  for (int threads : {1, 4}) {
    tg::ParallelMemcpy pool(threads);
    std::vector<std::vector<unsigned char>> src, dst;
    std::vector<tg::ParallelMemcpy::Job> jobs;
    uint32_t seed = 7;
    for (size_t n : sizes) {
      src.push_back(random_bytes(n + 16, seed++));
      dst.emplace_back(n + 16, 0x5A);
    }
    for (size_t i = 0; i < src.size(); ++i) jobs.push_back({dst[i].data() + 8, src[i].data() + 8, sizes[i]});
    pool.copy_all(jobs, threads == 4 ? tg::ParallelMemcpy::Stores::streaming : tg::ParallelMemcpy::Stores::cached);
    for (size_t i = 0; i < src.size(); ++i) {
      std::vector<unsigned char> want(sizes[i] + 16, 0x5A);
      std::memcpy(want.data() + 8, src[i].data() + 8, sizes[i]);
      CAPTURE(threads);
      CAPTURE(i);
      CHECK(dst[i] == want);
    }
  }
}

TEST_CASE("ParallelMemcpy serves callers on several threads one copy at a time, each complete") {
  tg::ParallelMemcpy pool(3);
  std::vector<long long> first_bad(4, -2);
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&, t] {
      long long bad = -1;
      for (int rep = 0; rep < 8 && bad < 0; ++rep)
        bad = copy_and_check(pool, (2u << 20) + static_cast<size_t>(t) * 977, static_cast<size_t>(t),
                             static_cast<uint32_t>(100 + t * 10 + rep));
      first_bad[static_cast<size_t>(t)] = bad;
    });
  for (auto& c : callers) c.join();
  for (int t = 0; t < 4; ++t) {
    CAPTURE(t);
    CHECK(first_bad[static_cast<size_t>(t)] == -1);
  }
}

TEST_CASE("copy_streaming copies like memcpy at every alignment and length around a 64-byte line") {
  const std::vector<unsigned char> src = random_bytes(4096, 99);
  for (size_t off = 0; off < 80; off += 7)
    for (size_t n : {size_t{0}, size_t{1}, size_t{15}, size_t{63}, size_t{64}, size_t{65}, size_t{200}, size_t{1000}}) {
      std::vector<unsigned char> dst(2048, 0x11), want(2048, 0x11);
      std::memcpy(want.data() + off, src.data() + 5, n);
      tg::copy_streaming(dst.data() + off, src.data() + 5, n);
      CAPTURE(off);
      CAPTURE(n);
      CHECK(dst == want);
    }
}

TEST_CASE("ParallelMemcpy with a lower min_parallel_bytes copies like memcpy on both sides of it") {
  const size_t min = 256 * 1024;  // tg-transfer's (experiments/transfer/buffers.h)
  tg::ParallelMemcpy pool(4, min);
  uint32_t seed = 500;
  for (size_t bytes : {min - 1, min, min + 4096 + 5, tg::ParallelMemcpy::kMinParallelBytes - 3})
    for (auto stores : {tg::ParallelMemcpy::Stores::cached, tg::ParallelMemcpy::Stores::streaming}) {
      CAPTURE(bytes);
      CHECK(copy_and_check(pool, bytes, 3, seed++, stores) == -1);
    }
}

TEST_CASE("ParallelMemcpy refuses fewer than one thread, and the shared pool has 1 to 4") {
  CHECK_THROWS_AS(tg::ParallelMemcpy(0), std::invalid_argument);
  const int n = tg::shared_host_copier().threads();
  CHECK(n >= 1);
  CHECK(n <= 4);
}
