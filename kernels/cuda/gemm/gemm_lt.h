#pragma once
// GEMMs through cuBLASLt: the GEMM-family products that the project's own kernels do not
// take (the last path of gemm.h's routing table) and matmul_heads' pointer-array GEMM.
//
// Why cuBLASLt: its epilogues fuse the bias, ReLU/GELU and the bias gradient into the
// GEMM (docs/compiler.md), and one API for the plain and the fused products keeps the
// kernels of an unfused static graph and of the dynamic executor identical: both ask the
// same cache for the same key.
//
// Row-major problems map onto cuBLASLt's column-major ones as in gemm_router.cpp: the
// row-major [m,n] D is the column-major [n,m] one, so D = op(A) op(B) is computed as
// D^T = op(B)^T op(A)^T with the operands swapped. A row-major bias over D's columns is
// then a bias over the column-major D's rows, which is what cuBLASLt's BIAS adds, and
// the bias gradient over D's rows (matmul_bias_grad's sum of dz's rows) is BGRADA.
//
// The heuristic's first algorithm is chosen once per shape and epilogue (LtCache), and
// kept: the static executor looks it up at compile time (OpCall::prepared) and gives it
// a workspace in its arena; the dynamic executor looks it up per call. With tuning on (a
// cache made with it: CudaBackendOptions::gemm_autotune), the first request of a key in the
// process times the heuristic's first kTuneCandidates algorithms and keeps the fastest, for
// every tuning cache of the process (one table), as cudnn.benchmark and XLA's autotuner do:
// faster GEMMs, and results that may differ in the last bits from one process to the next.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/shape.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/raii.h"
#include "kernels/op_call.h"

namespace tg::kernels {
struct CudaExecContext;
}  // namespace tg::kernels

namespace tg::kernels::cuda {

enum class LtEpilogue : uint8_t {
  none,       // D = op(A) op(B) (+ C)
  bias,       // + bias[n] (+ C)
  bias_relu,  // relu(... + bias)
  bias_gelu,  // gelu(... + bias), the tanh form, as the gelu op
  bias_grad,  // and bias_grad[n] = sum over the k rows of B (matmul_bias_grad, trans_a)
};

// One GEMM in row-major terms: D[b] (m x n) = op(A[b]) (m x k) op(B[b]) (k x n) [+ C[b]],
// leading dims of the stored operands, batch strides in elements (stride_b 0: one B).
// dtype is that of A, B, C, D and the bias alike (the GEMM ops are kTypeSame): bf16 and f16
// run on the tensor cores with f32 accumulation, f32 scale factors and one rounding into
// dtype on the store; tf32 (f32 inputs rounded to tf32 inside the product) is for f32 only.
// The alignments are of the pointers the GEMM runs on (bytes, a power of two, at most 256;
// a null pointer counts as 256): an algorithm chosen for 256-byte-aligned operands must
// not be given others (cuBLASLt refuses the call), so they are part of the key.
struct LtKey {
  bool trans_a = false, trans_b = false, tf32 = false, accumulate = false;
  DType dtype = DType::F32;
  LtEpilogue epilogue = LtEpilogue::none;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldd = 0, stride_a = 0, stride_b = 0;
  // Batched through device arrays of the matrices' addresses (cuBLASLt's pointer-array
  // batch mode) instead of strides, for batches whose matrices are not evenly spaced
  // (matmul_heads' head views); the strides are then 0. No C and no epilogue. run() takes
  // the arrays' addresses in place of a, b and d, and the call's workspace begins with
  // room for them (pointer_array_bytes(), counted in LtGemm::workspace_bytes()).
  bool pointer_arrays = false;
  size_t pointer_array_bytes() const;  // 3 arrays of `batch` pointers, 256-byte rounded; 0 when strided
  uint16_t align_a = 256, align_b = 256, align_c = 256, align_d = 256, align_bias = 256;
  bool operator==(const LtKey& o) const;
  std::string str() const;
};
struct LtKeyHash {
  size_t operator()(const LtKey& k) const;
};

// Descriptors and the chosen algorithm of one LtKey.
class LtTuner;

// cuBLASLt's heuristic offers no algorithm for a key (a CudaError: the GEMM cannot run).
class LtNoAlgorithm : public CudaError {
 public:
  using CudaError::CudaError;
};

class LtGemm {
 public:
  // Throws LtNoAlgorithm when cuBLASLt offers no algorithm for the key within max_workspace.
  LtGemm(cublasLtHandle_t h, const LtKey& key, size_t max_workspace);
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  const LtKey& key() const { return key_; }
  // What a call needs: the pointer arrays' room (key().pointer_array_bytes()) and then
  // the algorithm's workspace.
  size_t workspace_bytes() const { return key_.pointer_array_bytes() + workspace_; }
  const cublasLtMatmulAlgo_t& algo() const { return algo_; }
  // c: the accumulated term (key.accumulate), may equal d. bias: the bias vector, or the
  // bias gradient's output (bias_grad). ws: the algorithm's workspace, past the pointer
  // arrays when the key has them (a, b and d are then the arrays' device addresses).
  // The operands are of key().dtype.
  void run(cublasLtHandle_t h, const void* a, const void* b, const void* c, void* d, const void* bias, void* ws,
           size_t ws_bytes, cudaStream_t s) const;

 private:
  friend class LtTuner;
  void destroy() noexcept;
  LtKey key_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t la_ = nullptr, lb_ = nullptr, ld_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  size_t workspace_ = 0;
};

// The alignment class of a pointer, for LtKey.
uint16_t lt_alignment(const void* p);

// The product a GEMM-family call computes on cuBLASLt, as an LtKey (gemm_router.cpp's folding,
// and its padded product where ctx's options stage it: kernels/gemm/gemm_staging.h): for
// reports that look at a schedule's GEMMs.
LtKey gemm_key(const OpCall& c, const CudaExecContext& ctx);

// What the scratch operands of a timed GEMM hold. The same GEMM runs measurably faster on
// a constant fill than on varied data (fewer bits toggle, so the GPU draws less power and
// holds a higher clock), so timings meant to stand for a model's GEMMs use `random`.
enum class LtOperandFill : uint8_t {
  random,    // pseudo-random values in [-1, 1) of the key's dtype, the same every run
  constant,  // every byte 0x3c (each float ~0.0115, each bf16 ~0.0115, each f16 ~1.06)
};

// Scratch operands for one key: A, B, C, D and the bias (256-byte aligned, which every
// alignment class of a key allows) and `workspace` bytes, filled as asked on stream s.
// For a pointer-array key, a, b and c = d are the device arrays of the matrices' addresses
// (LtGemm::run's arguments for it). The operands hold elements of key.dtype (behind float
// pointers, as TensorView's data).
class LtOperands {
 public:
  LtOperands(const LtKey& key, size_t workspace, LtOperandFill fill, cudaStream_t s);
  float *a = nullptr, *b = nullptr, *c = nullptr, *d = nullptr, *bias = nullptr;
  void* ws = nullptr;
  size_t ws_bytes = 0;

 private:
  tg::cuda::DeviceBuffer buf_;
};

// The fastest of the first `candidates` algorithms cuBLASLt's heuristic offers for `key`
// (each timed with CUDA events over a few launches on LtOperands filled as `fill`): what
// cuBLASLt can do at best for this product. For reports (tg-train's GEMM floor), not for
// the executors, which take the heuristic's first choice.
double lt_best_seconds(cublasLtHandle_t h, const LtKey& key, size_t max_workspace, int candidates, cudaStream_t s,
                       LtOperandFill fill = LtOperandFill::random);

// The algorithms a tuning run times: how many of the heuristic's first it asks for.
inline constexpr int kTuneCandidates = 16;

// What tuning and lt_best_seconds share: time the heuristic's candidates for a key
// (each on scratch operands, fastest first), and set a GEMM to the process's choice.
class LtTuner {
 public:
  struct Timed {
    cublasLtMatmulAlgo_t algo;
    size_t workspace;
    double seconds;
  };
  static std::vector<Timed> time_candidates(cublasLtHandle_t h, LtGemm& probe, size_t max_workspace, int candidates,
                                            cudaStream_t s, LtOperandFill fill);
  // A GEMM of `key` set to the fastest candidate; its time per call in *seconds if given.
  static std::unique_ptr<LtGemm> best(cublasLtHandle_t h, const LtKey& key, size_t max_workspace, int candidates,
                                      cudaStream_t s, LtOperandFill fill, double* seconds);
  static void tune(cublasLtHandle_t h, LtGemm& gemm, size_t max_workspace, cudaStream_t s);
};

// The prepared GEMMs of one backend, by key. Entries live as long as the cache.
class LtCache {
 public:
  // tune: GEMM tuning (above) for the keys this cache is asked for.
  LtCache(cublasLtHandle_t h, size_t max_workspace, bool tune = false)
      : h_(h), max_workspace_(max_workspace), tune_(tune) {}
  // A new key's algorithm is tuned on stream s when tuning is on (and s is not capturing).
  const LtGemm& get(const LtKey& key, cudaStream_t s);
  // The same, or null when cuBLASLt offers no algorithm for the key (remembered: the
  // heuristic is asked once per key).
  const LtGemm* find(const LtKey& key, cudaStream_t s);
  cublasLtHandle_t handle() const { return h_; }
  size_t max_workspace() const { return max_workspace_; }
  bool tunes() const { return tune_; }
  // The workspace of a staged GEMM (kernels/gemm/gemm_staging.h) whose call brings none (the
  // dynamic executor's): a buffer of this cache's, grown here to `bytes` when smaller (s is
  // synchronized first, and must not be capturing: std::invalid_argument), kept for the next.
  // The static executor plans the room in its arena instead (Backend::Prepared).
  void* staging_workspace(size_t bytes, cudaStream_t s);
  size_t staging_workspace_bytes() const { return staging_.bytes(); }

 private:
  cublasLtHandle_t h_;
  size_t max_workspace_;
  bool tune_;
  tg::cuda::DeviceBuffer staging_;
  std::mutex mu_;
  std::unordered_map<LtKey, std::unique_ptr<LtGemm>, LtKeyHash> gemms_;
  std::unordered_map<LtKey, std::string, LtKeyHash> refused_;  // the heuristic's refusals
};

}  // namespace tg::kernels::cuda
