#include "kernels/gemm/gemm_mode.h"

#include <atomic>

namespace tg::kernels {

namespace {
std::atomic<bool> g_batch_invariant{false};
}  // namespace

void set_batch_invariant_matmul(bool on) { g_batch_invariant.store(on, std::memory_order_relaxed); }
bool batch_invariant_matmul() { return g_batch_invariant.load(std::memory_order_relaxed); }

}  // namespace tg::kernels
