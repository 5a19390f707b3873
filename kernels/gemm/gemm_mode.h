#pragma once
// Batch-invariant matmul: one process-wide switch, as torch.use_deterministic_algorithms
// is one, so that both executors and the CPU interpreter always agree on it.
//
// Off (the default): matmuls go to the vendor BLAS (OpenBLAS, cuBLAS), which pick
// their kernels by shape, so one row of a product may round differently when the
// number of rows changes (measured: OpenBLAS, a 5-row against an 8-row product).
// On: both backends run one plain kernel in which every output element is the sum
// over k in order, each product and each sum rounded on its own. A row's bits then
// no longer depend on how many rows there are, a sum over a padded axis only gains
// exact zeros at its end, and the CPU and CUDA results are bit for bit equal too.
// It is slow (no BLAS): it exists so that the bucket shape strategy can be exact
// (static/shape_strategy.h) and for tests. The switch is read when a matmul runs;
// a captured CUDA Graph keeps what was captured.
namespace tg::kernels {

void set_batch_invariant_matmul(bool on);
bool batch_invariant_matmul();

// Turns the switch on (or off) for its lifetime, then back to what it was.
class BatchInvariantMatmul {
 public:
  explicit BatchInvariantMatmul(bool on = true) : before_(batch_invariant_matmul()) { set_batch_invariant_matmul(on); }
  ~BatchInvariantMatmul() { set_batch_invariant_matmul(before_); }
  BatchInvariantMatmul(const BatchInvariantMatmul&) = delete;
  BatchInvariantMatmul& operator=(const BatchInvariantMatmul&) = delete;

 private:
  bool before_;
};

}  // namespace tg::kernels
