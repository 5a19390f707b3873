#pragma once
// Host buffers and the byte patterns every copy is verified with (CPU only; no CUDA here).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tg::transfer {

inline constexpr size_t KiB = size_t{1} << 10, MiB = size_t{1} << 20, GiB = size_t{1} << 30;
// Where tg-transfer's copy threads start splitting a copy: 256 KiB, as when
// docs/results/transfer.json was measured (the static executor's feeds use
// ParallelMemcpy's default of 1 MiB, which suits a batch of several buffers).
inline constexpr size_t kCopyThreadsMinBytes = 256 * KiB;

// The sizes swept. 1 KiB, 1 MiB and 512 MiB are always present; --quick keeps six.
std::vector<size_t> sweep_sizes(bool quick);
std::string size_label(size_t bytes);  // "1 KiB", "64 MiB", "1 GiB"

// Page-aligned malloc'd (pageable) memory. Allocation alone maps nothing: the kernel
// backs pages on first touch, so touch() must run before anything is timed, or the
// first timed copy pays one page fault per 4 KiB page.
class HostBuffer {
 public:
  explicit HostBuffer(size_t bytes);
  ~HostBuffer();
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  void* data() { return p_; }
  size_t size() const { return n_; }
  void touch();  // writes one byte per page

 private:
  void* p_ = nullptr;
  size_t n_ = 0;
};

// Word i of the pattern for `seed` (splitmix64), so any position can be checked alone.
uint64_t pattern_word(uint64_t seed, size_t i);
void fill_pattern(void* data, size_t bytes, uint64_t seed);  // bytes % 8 == 0
void poison(void* data, size_t bytes);                       // 0xA5 everywhere
// Checks data against the pattern: every word up to 1 MiB; above that the first and
// last 512 words and 4096 positions spread over the buffer. Throws std::runtime_error
// naming `what` and the first mismatching words (index, expected, found).
void verify_pattern(const void* data, size_t bytes, uint64_t seed, const std::string& what);

}  // namespace tg::transfer
