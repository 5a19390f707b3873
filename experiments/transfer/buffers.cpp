#include "experiments/transfer/buffers.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

namespace tg::transfer {

std::vector<size_t> sweep_sizes(bool quick) {
  if (quick) return {KiB, 64 * KiB, MiB, 16 * MiB, 64 * MiB, 512 * MiB};
  // Powers of 4 from 1 KiB to 1 GiB, plus 512 MiB (the reference figure's size).
  return {KiB,       4 * KiB,   16 * KiB,  64 * KiB,   256 * KiB,  MiB, 4 * MiB,
          16 * MiB, 64 * MiB, 256 * MiB, 512 * MiB, GiB};
}

std::string size_label(size_t bytes) {
  if (bytes >= GiB && bytes % GiB == 0) return fmt::format("{} GiB", bytes / GiB);
  if (bytes >= MiB && bytes % MiB == 0) return fmt::format("{} MiB", bytes / MiB);
  if (bytes >= KiB && bytes % KiB == 0) return fmt::format("{} KiB", bytes / KiB);
  return fmt::format("{} B", bytes);
}

HostBuffer::HostBuffer(size_t bytes) : n_(bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t rounded = (bytes + page - 1) / page * page;  // aligned_alloc wants a multiple
  p_ = std::aligned_alloc(page, rounded == 0 ? page : rounded);
  if (!p_) throw std::bad_alloc();
}

HostBuffer::~HostBuffer() { std::free(p_); }

void HostBuffer::touch() {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  auto* b = static_cast<volatile unsigned char*>(p_);
  for (size_t i = 0; i < n_; i += page) b[i] = 0;
  if (n_) b[n_ - 1] = 0;
}

uint64_t pattern_word(uint64_t seed, size_t i) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(i) + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void fill_pattern(void* data, size_t bytes, uint64_t seed) {
  if (bytes % 8) throw std::invalid_argument(fmt::format("fill_pattern: {} bytes is not a multiple of 8", bytes));
  auto* w = static_cast<uint64_t*>(data);
  for (size_t i = 0; i < bytes / 8; ++i) w[i] = pattern_word(seed, i);
}

void poison(void* data, size_t bytes) { std::memset(data, 0xA5, bytes); }

void verify_pattern(const void* data, size_t bytes, uint64_t seed, const std::string& what) {
  const auto* w = static_cast<const uint64_t*>(data);
  const size_t words = bytes / 8;
  std::string bad;
  int mismatches = 0;
  auto check = [&](size_t i) {
    const uint64_t want = pattern_word(seed, i);
    if (w[i] == want) return;
    if (++mismatches <= 5) bad += fmt::format("\n  word {}: expected {:#018x}, found {:#018x}", i, want, w[i]);
  };
  if (bytes <= MiB) {
    for (size_t i = 0; i < words; ++i) check(i);
  } else {
    for (size_t i = 0; i < 512; ++i) {
      check(i);
      check(words - 1 - i);
    }
    for (size_t s = 0; s < 4096; ++s) check(pattern_word(seed ^ 0x5EED, s) % words);
  }
  if (mismatches)
    throw std::runtime_error(fmt::format("verification failed for {} ({}): {} mismatching words checked{}", what,
                                         size_label(bytes), mismatches, bad));
}

}  // namespace tg::transfer
