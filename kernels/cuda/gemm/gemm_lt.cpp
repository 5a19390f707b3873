#include "kernels/cuda/gemm/gemm_lt.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <functional>
#include <vector>

#include "graph/float_formats.h"
#include "kernels/cuda/capture.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/event_timing.h"
#include "kernels/cuda/raii.h"

namespace tg::kernels::cuda {

namespace {

cublasLtEpilogue_t lt_epilogue(LtEpilogue e) {
  switch (e) {
    case LtEpilogue::none: return CUBLASLT_EPILOGUE_DEFAULT;
    case LtEpilogue::bias: return CUBLASLT_EPILOGUE_BIAS;
    case LtEpilogue::bias_relu: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case LtEpilogue::bias_gelu: return CUBLASLT_EPILOGUE_GELU_BIAS;
    case LtEpilogue::bias_grad: return CUBLASLT_EPILOGUE_BGRADA;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

const char* epilogue_name(LtEpilogue e) {
  switch (e) {
    case LtEpilogue::none: return "none";
    case LtEpilogue::bias: return "bias";
    case LtEpilogue::bias_relu: return "bias_relu";
    case LtEpilogue::bias_gelu: return "bias_gelu";
    case LtEpilogue::bias_grad: return "bias_grad";
  }
  return "?";
}

cudaDataType_t lt_data_type(DType dt) {
  switch (dt) {
    case DType::F32: return CUDA_R_32F;
    case DType::BF16: return CUDA_R_16BF;
    case DType::F16: return CUDA_R_16F;
    case DType::I32:
    case DType::I64: break;  // no GEMM takes integers (graph/dtype_rules.h)
  }
  return CUDA_R_32F;
}

// A column-major layout of `rows` x `cols` elements of `dt` with leading dim `ld`, batched
// when batch > 1: by `stride`, or through pointer arrays.
cublasLtMatrixLayout_t layout(DType dt, int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride,
                              bool pointer_arrays) {
  cublasLtMatrixLayout_t l = nullptr;
  TG_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, lt_data_type(dt), static_cast<uint64_t>(rows),
                                             static_cast<uint64_t>(cols), ld));
  if (batch > 1 || pointer_arrays) {
    const int32_t count = static_cast<int32_t>(batch);
    TG_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
    if (pointer_arrays) {
      const int32_t mode = CUBLASLT_BATCH_MODE_POINTER_ARRAY;
      TG_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, &mode, sizeof mode));
    } else {
      TG_CUBLAS_CHECK(
          cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
    }
  }
  return l;
}

// The workspace an algorithm of `key` may use: max_workspace less the pointer arrays' room.
size_t algo_workspace_limit(const LtKey& key, size_t max_workspace) {
  const size_t arrays = key.pointer_array_bytes();
  if (arrays > max_workspace)
    throw std::invalid_argument(fmt::format("cuBLASLt GEMM {}: its pointer arrays need {} bytes, the workspace limit "
                                            "is {}; raise the limit or split the batch",
                                            key.str(), arrays, max_workspace));
  return max_workspace - arrays;
}

// The preference of a key: at most max_workspace bytes, and the operands' alignments
// (cuBLASLt's A is our B: operands swap in the column-major form).
cublasLtMatmulPreference_t make_preference(const LtKey& key, size_t max_workspace) {
  cublasLtMatmulPreference_t pref = nullptr;
  TG_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  auto set = [&](cublasLtMatmulPreferenceAttributes_t attr, const void* v, size_t n) {
    const cublasStatus_t s = cublasLtMatmulPreferenceSetAttribute(pref, attr, v, n);
    if (s != CUBLAS_STATUS_SUCCESS) {
      cublasLtMatmulPreferenceDestroy(pref);
      TG_CUBLAS_CHECK(s);
    }
  };
  set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_workspace, sizeof max_workspace);
  const uint32_t a = key.align_b, b = key.align_a, c = key.align_c, d = key.align_d;
  set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &a, sizeof a);
  set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &b, sizeof b);
  set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &c, sizeof c);
  set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &d, sizeof d);
  if (key.dtype != DType::F32) {
    // A split-K product reduced in place or in the output type would round its partial
    // sums to 16 bits; reduced in f32 (or not split) it rounds once, on the store, as the
    // CPU reference (kernels/cpu/widen.cpp) does.
    const uint32_t schemes = CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    set(CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes, sizeof schemes);
  }
  return pref;
}

}  // namespace

uint16_t lt_alignment(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  if (a == 0) return 256;
  const uintptr_t low = a & (~a + 1);  // the lowest set bit
  return static_cast<uint16_t>(low >= 256 ? 256 : low);
}

bool LtKey::operator==(const LtKey& o) const {
  return trans_a == o.trans_a && trans_b == o.trans_b && tf32 == o.tf32 && accumulate == o.accumulate &&
         dtype == o.dtype && epilogue == o.epilogue && batch == o.batch && m == o.m && n == o.n && k == o.k && lda == o.lda &&
         ldb == o.ldb && ldd == o.ldd && stride_a == o.stride_a && stride_b == o.stride_b && pointer_arrays == o.pointer_arrays &&
         align_a == o.align_a &&
         align_b == o.align_b && align_c == o.align_c && align_d == o.align_d && align_bias == o.align_bias;
}

std::string LtKey::str() const {
  return fmt::format("{}{}[{} x ({}x{}) {}x{}{}] epilogue {}{}{}, ld {} {} {}, {}, alignments A {} B {} "
                     "C {} D {} bias {}",
                     dtype_name(dtype), batch > 1 ? " batched " : " ", batch, m, k, trans_a ? "^T" : "", n,
                     trans_b ? "^T" : "",
                     epilogue_name(epilogue), accumulate ? " + C" : "", tf32 ? " tf32" : "", lda, ldb, ldd,
                     pointer_arrays ? std::string("pointer arrays")
                                    : fmt::format("strides {} {} {}", stride_a, stride_b, m * ldd),
                     align_a, align_b, align_c, align_d, align_bias);
}

size_t LtKey::pointer_array_bytes() const {
  return pointer_arrays ? (3 * static_cast<size_t>(batch) * sizeof(void*) + 255) / 256 * 256 : 0;
}

size_t LtKeyHash::operator()(const LtKey& k) const {
  size_t h = 0;
  auto mix = [&h](int64_t v) { h ^= std::hash<int64_t>{}(v) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  mix((k.trans_a ? 1 : 0) | (k.trans_b ? 2 : 0) | (k.tf32 ? 4 : 0) | (k.accumulate ? 8 : 0) |
      (static_cast<int>(k.epilogue) << 4) | (k.pointer_arrays ? 1 << 8 : 0) |
      (static_cast<int>(k.dtype) << 9));
  for (int64_t v : {k.batch, k.m, k.n, k.k, k.lda, k.ldb, k.ldd, k.stride_a, k.stride_b}) mix(v);
  mix((int64_t{k.align_a} << 48) | (int64_t{k.align_b} << 36) | (int64_t{k.align_c} << 24) | (k.align_d << 12) |
      k.align_bias);
  return h;
}

LtGemm::LtGemm(cublasLtHandle_t h, const LtKey& key, size_t max_workspace) : key_(key) {
  if (key.tf32 && key.dtype != DType::F32)
    throw std::invalid_argument(fmt::format("cuBLASLt GEMM {}: tf32 is a mode of f32 operands; a {} GEMM computes "
                                            "in f32 from its own inputs, give it a key with tf32 off",
                                            key.str(), dtype_name(key.dtype)));
  try {
    // The scale type (alpha, beta) is f32 for every dtype: 16-bit operands accumulate in f32.
    TG_CUBLAS_CHECK(cublasLtMatmulDescCreate(&op_, key.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                                             CUDA_R_32F));
    // Column-major D^T = op(B)^T op(A)^T: cuBLASLt's A is our B, its B our A.
    const cublasOperation_t ta = key.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t tb = key.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    TG_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    TG_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    const cublasLtEpilogue_t e = lt_epilogue(key.epilogue);
    TG_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e));
    // Stored shapes (before op): our B is k x n row-major = n x k column-major (k x n when transposed).
    if (key.pointer_arrays && (key.accumulate || key.epilogue != LtEpilogue::none))
      throw std::invalid_argument(fmt::format("cuBLASLt GEMM {}: pointer arrays take no C and no epilogue here",
                                              key.str()));
    const bool pa = key.pointer_arrays;
    const DType dt = key.dtype;
    la_ = key.trans_b ? layout(dt, key.k, key.n, key.ldb, key.batch, key.stride_b, pa)
                      : layout(dt, key.n, key.k, key.ldb, key.batch, key.stride_b, pa);
    lb_ = key.trans_a ? layout(dt, key.m, key.k, key.lda, key.batch, key.stride_a, pa)
                      : layout(dt, key.k, key.m, key.lda, key.batch, key.stride_a, pa);
    ld_ = layout(dt, key.n, key.m, key.ldd, key.batch, key.m * key.ldd, pa);
    if (key.epilogue != LtEpilogue::none) {
      // The heuristic reads the bias pointer's value for its alignment: a stand-in of the
      // same alignment (run() sets the real one).
      const void* stand_in = reinterpret_cast<const void*>(uintptr_t{key.align_bias});
      TG_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &stand_in, sizeof stand_in));
    }
    const size_t limit = algo_workspace_limit(key, max_workspace);
    cublasLtMatmulPreference_t pref = make_preference(key, limit);
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(h, op_, la_, lb_, ld_, ld_, pref, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS || found < 1)
      throw LtNoAlgorithm(fmt::format("cuBLASLt offers no algorithm for {} (status {}, {} found, workspace limit {} "
                                  "bytes); this GEMM cannot run on this device through cuBLASLt",
                                  key.str(), static_cast<int>(st), found, limit));
    algo_ = result.algo;
    workspace_ = result.workspaceSize;
  } catch (...) {
    destroy();
    throw;
  }
}

LtGemm::~LtGemm() { destroy(); }

void LtGemm::destroy() noexcept {
  if (ld_) cublasLtMatrixLayoutDestroy(ld_);
  if (lb_) cublasLtMatrixLayoutDestroy(lb_);
  if (la_) cublasLtMatrixLayoutDestroy(la_);
  if (op_) cublasLtMatmulDescDestroy(op_);
  ld_ = lb_ = la_ = nullptr;
  op_ = nullptr;
}

void LtGemm::run(cublasLtHandle_t h, const void* a, const void* b, const void* c, void* d, const void* bias,
                 void* ws, size_t ws_bytes, cudaStream_t s) const {
  if (ws_bytes < workspace_)
    throw std::invalid_argument(fmt::format("cuBLASLt GEMM {}: needs {} bytes of workspace, the call has {}",
                                            key_.str(), workspace_, ws_bytes));
  if (key_.epilogue != LtEpilogue::none) {
    if (!bias) throw std::invalid_argument(fmt::format("cuBLASLt GEMM {}: the bias pointer is null", key_.str()));
    // The descriptor is shared by every call of this shape; the pointer is set per call,
    // before the launch, on the calling thread (LtCache callers run one stream each).
    TG_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
  }
  const float one = 1.0f, zero = 0.0f;
  const void* cc = key_.accumulate ? c : d;
  TG_CUBLAS_CHECK(cublasLtMatmul(h, op_, &one, b, la_, a, lb_, key_.accumulate ? &one : &zero, cc, ld_, d, ld_, &algo_,
                                 ws, workspace_, s));
}

namespace {

// A pseudo-random pattern of values in [-1, 1) (a fixed LCG, so every run times the same
// data), kPatternValues long, stored as `dt` (16-bit values rounded from the same floats, so
// that no bit pattern of a 16-bit operand is a NaN or an infinity), tiled over a buffer.
constexpr size_t kPatternValues = size_t{1} << 20;

const std::vector<char>& random_pattern(DType dt) {
  static const std::vector<float> values = [] {
    std::vector<float> v(kPatternValues);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (float& f : v) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      f = static_cast<float>(static_cast<double>(x >> 40) / static_cast<double>(uint64_t{1} << 23) - 1.0);
    }
    return v;
  }();
  static std::mutex mu;
  static std::vector<char> stored[3];
  std::lock_guard<std::mutex> lock(mu);
  std::vector<char>& p = stored[static_cast<int>(dt)];
  if (p.empty()) {
    p.resize(kPatternValues * static_cast<size_t>(dtype_size(dt)));
    store_as_dtype(values.data(), kPatternValues, dt, p.data());
  }
  return p;
}

void fill_operands(void* p, size_t bytes, DType dt, LtOperandFill fill, cudaStream_t s) {
  if (fill == LtOperandFill::constant) {
    TG_CUDA_CHECK(cudaMemsetAsync(p, 0x3c, bytes, s));
    return;
  }
  const std::vector<char>& pat = random_pattern(dt);
  const size_t first = std::min(bytes, pat.size());
  char* base = static_cast<char*>(p);
  // Pageable source: cudaMemcpyAsync returns once the bytes are staged, so the vector may
  // be read by the next call at once.
  TG_CUDA_CHECK(cudaMemcpyAsync(base, pat.data(), first, cudaMemcpyHostToDevice, s));
  for (size_t done = first; done < bytes;) {  // doubling device copies of what is there
    const size_t n = std::min(done, bytes - done);
    TG_CUDA_CHECK(cudaMemcpyAsync(base + done, base, n, cudaMemcpyDeviceToDevice, s));
    done += n;
  }
}

}  // namespace

LtOperands::LtOperands(const LtKey& key, size_t workspace, LtOperandFill fill, cudaStream_t s) {
  const int64_t size = dtype_size(key.dtype);
  auto up = [&](int64_t elems) { return (elems * size + 255) / 256 * 256; };  // bytes
  // Leading dimensions may exceed the extents: size each operand by its stored span.
  // Pointer-array keys get their matrices back to back (each rows x ld, 256-byte aligned)
  // and the arrays.
  const int64_t rows_a = key.trans_a ? key.k : key.m, rows_b = key.trans_b ? key.n : key.k;
  auto step = [&](int64_t elems) { return key.pointer_arrays ? up(elems) / size : elems; };
  const int64_t step_a = key.pointer_arrays ? step(rows_a * key.lda) : key.stride_a;
  const int64_t step_b = key.pointer_arrays ? step(rows_b * key.ldb) : key.stride_b;
  const int64_t step_d = step(key.m * key.ldd);
  const int64_t span_a = (key.batch - 1) * step_a + rows_a * key.lda;
  const int64_t span_b = ((step_b ? key.batch : 1) - 1) * step_b + rows_b * key.ldb;
  const int64_t a_b = up(span_a), b_b = up(span_b), d_b = up((key.batch - 1) * step_d + key.m * key.ldd), bias_b = up(key.n + key.m);
  const size_t data = static_cast<size_t>(a_b + b_b + 2 * d_b + bias_b), arrays = key.pointer_array_bytes();
  buf_ = tg::cuda::DeviceBuffer::allocate(data + arrays + workspace);
  char* base = static_cast<char*>(buf_.get());
  a = reinterpret_cast<float*>(base);
  b = reinterpret_cast<float*>(base + a_b);
  d = reinterpret_cast<float*>(base + a_b + b_b);
  c = reinterpret_cast<float*>(base + a_b + b_b + d_b);
  bias = reinterpret_cast<float*>(base + a_b + b_b + 2 * d_b);
  ws = base + data + arrays;
  ws_bytes = workspace;
  fill_operands(base, data, key.dtype, fill, s);
  if (key.pointer_arrays) {  // a, b and d become the arrays of their matrices' addresses
    const size_t n = static_cast<size_t>(key.batch);
    std::vector<const char*> table(3 * n);
    for (size_t i = 0; i < n; ++i) {
      const int64_t j = static_cast<int64_t>(i) * size;
      table[i] = reinterpret_cast<const char*>(a) + j * step_a;
      table[n + i] = reinterpret_cast<const char*>(b) + j * step_b;
      table[2 * n + i] = reinterpret_cast<const char*>(d) + j * step_d;
    }
    auto** dev = reinterpret_cast<const float**>(base + data);
    // Pageable source: the copy has staged the table when the call returns.
    TG_CUDA_CHECK(cudaMemcpyAsync(dev, table.data(), 3 * n * sizeof(void*), cudaMemcpyHostToDevice, s));
    a = reinterpret_cast<float*>(dev);
    b = reinterpret_cast<float*>(dev + n);
    c = d = reinterpret_cast<float*>(dev + 2 * n);
  }
}

// The first `candidates` algorithms cuBLASLt's heuristic offers for the probe's key (within
// max_workspace), each timed with CUDA events over a few launches on scratch operands
// (LtOperands: 256-byte aligned, which every alignment class of a key allows). Sorted
// fastest first.
std::vector<LtTuner::Timed> LtTuner::time_candidates(cublasLtHandle_t h, LtGemm& probe, size_t max_workspace,
                                                     int candidates, cudaStream_t s, LtOperandFill fill) {
  const LtKey& key = probe.key();
  const size_t limit = algo_workspace_limit(key, max_workspace);
  cublasLtMatmulPreference_t pref = make_preference(key, limit);
  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<size_t>(candidates));
  int found = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(h, probe.op_, probe.la_, probe.lb_, probe.ld_, probe.ld_,
                                                           pref, candidates, results.data(), &found);
  cublasLtMatmulPreferenceDestroy(pref);
  TG_CUBLAS_CHECK(st);
  const LtOperands x(key, limit, fill, s);
  constexpr int kWarm = 3, kTimed = 10;
  std::vector<Timed> timed;
  for (int i = 0; i < found; ++i) {
    const cublasLtMatmulHeuristicResult_t& r = results[static_cast<size_t>(i)];
    if (r.state != CUBLAS_STATUS_SUCCESS || r.workspaceSize > limit) continue;
    probe.algo_ = r.algo;
    probe.workspace_ = r.workspaceSize;
    const double ms = tg::cuda::mean_run_ms(s, kWarm, kTimed, [&] {
      probe.run(h, x.a, x.b, x.c, x.d, x.bias, x.ws, x.ws_bytes, s);
      return true;
    });
    timed.push_back({r.algo, r.workspaceSize, ms * 1e-3});
  }
  std::stable_sort(timed.begin(), timed.end(), [](const Timed& p, const Timed& q) { return p.seconds < q.seconds; });
  return timed;
}

std::unique_ptr<LtGemm> LtTuner::best(cublasLtHandle_t h, const LtKey& key, size_t max_workspace, int candidates,
                                      cudaStream_t s, LtOperandFill fill, double* seconds) {
  auto g = std::make_unique<LtGemm>(h, key, max_workspace);
  const std::vector<Timed> timed = time_candidates(h, *g, max_workspace, candidates, s, fill);
  if (timed.empty())
    throw std::runtime_error(fmt::format("cuBLASLt GEMM {}: no candidate algorithm ran", key.str()));
  g->algo_ = timed.front().algo;
  g->workspace_ = timed.front().workspace;
  if (seconds) *seconds = timed.front().seconds;
  return g;
}

namespace {

// The algorithms tuning chose, for every cache of the process: (device, key) -> algorithm.
// One table, so that two backends (the static and the dynamic executor's) given the same
// product run the same algorithm and stay bitwise equal.
struct TunedKey {
  int device;
  LtKey key;
  bool operator==(const TunedKey& o) const { return device == o.device && key == o.key; }
};
struct TunedKeyHash {
  size_t operator()(const TunedKey& k) const { return LtKeyHash{}(k.key) * 31 + static_cast<size_t>(k.device); }
};
std::mutex g_tuned_mu;
std::unordered_map<TunedKey, LtTuner::Timed, TunedKeyHash>& tuned_table() {
  static std::unordered_map<TunedKey, LtTuner::Timed, TunedKeyHash> table;
  return table;
}

}  // namespace

// Tuning's choice for the gemm's key, timed now when no backend has asked for it yet.
// Timing allocates and synchronizes, which a stream being captured must not see: there
// the heuristic's choice stays (and nothing is recorded).
void LtTuner::tune(cublasLtHandle_t h, LtGemm& gemm, size_t max_workspace, cudaStream_t s) {
  if (stream_capturing(s)) return;
  int device = 0;
  TG_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(g_tuned_mu);
  const TunedKey tk{device, gemm.key()};
  auto it = tuned_table().find(tk);
  if (it == tuned_table().end()) {
    const cublasLtMatmulAlgo_t first = gemm.algo_;
    const size_t first_ws = gemm.workspace_;
    const std::vector<Timed> timed = time_candidates(h, gemm, max_workspace, kTuneCandidates, s, LtOperandFill::random);
    const Timed pick = timed.empty() ? Timed{first, first_ws, 0.0} : timed.front();
    it = tuned_table().emplace(tk, pick).first;
  }
  gemm.algo_ = it->second.algo;
  gemm.workspace_ = it->second.workspace;
}

double lt_best_seconds(cublasLtHandle_t h, const LtKey& key, size_t max_workspace, int candidates, cudaStream_t s,
                       LtOperandFill fill) {
  LtGemm probe(h, key, max_workspace);  // the descriptors; its algorithm is replaced while timing
  const std::vector<LtTuner::Timed> timed = LtTuner::time_candidates(h, probe, max_workspace, candidates, s, fill);
  return timed.empty() ? -1.0 : timed.front().seconds;
}

const LtGemm& LtCache::get(const LtKey& key, cudaStream_t s) {
  if (const LtGemm* g = find(key, s)) return *g;
  std::lock_guard<std::mutex> lock(mu_);
  throw LtNoAlgorithm(refused_.at(key));
}

const LtGemm* LtCache::find(const LtKey& key, cudaStream_t s) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = gemms_.find(key);
  if (it != gemms_.end()) return it->second.get();
  if (refused_.count(key)) return nullptr;
  std::unique_ptr<LtGemm> g;
  try {
    g = std::make_unique<LtGemm>(h_, key, max_workspace_);
  } catch (const LtNoAlgorithm& e) {
    refused_.emplace(key, e.what());
    return nullptr;
  }
  if (tune_) LtTuner::tune(h_, *g, max_workspace_, s);
  const LtGemm* ref = g.get();
  gemms_.emplace(key, std::move(g));
  return ref;
}

void* LtCache::staging_workspace(size_t bytes, cudaStream_t s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (staging_.bytes() < bytes) {
    if (stream_capturing(s))
      throw std::invalid_argument(fmt::format(
          "a GEMM with operands staged into padded copies needs {} bytes of workspace and its first call without one "
          "is being captured: run the step once before capturing, or give the call a workspace",
          bytes));
    TG_CUDA_CHECK(cudaStreamSynchronize(s));  // the old buffer may still be in use
    staging_.reset();
    staging_ = tg::cuda::DeviceBuffer::allocate(bytes);
  }
  return staging_.get();
}

}  // namespace tg::kernels::cuda
