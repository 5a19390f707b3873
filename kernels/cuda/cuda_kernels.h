#pragma once
// The CUDA kernels: launchers over raw device pointers, sizes and a stream, and the
// entry run_cuda that maps an OpCall onto them. The formulas are those of the CPU
// reference (kernels/cpu/cpu_kernels.h); differences:
//  - reductions accumulate in float inside a row (softmax, layernorm, losses per row)
//    and in double across rows/axes (reduce_*, layernorm_grad_gamma, loss totals);
//    tests compare with atol + rtol*|ref|;
//  - plain float ops (add, sub, mul, scale, bias_add, relu*, sgd*, mse_loss_grad,
//    fill, copy) are computed exactly as written, so they match the CPU bit for bit;
//  - a label that is not an integer in [0, classes) cannot throw from a kernel: the
//    loss becomes NaN and the gradient row NaN, so it shows up in the results.
// Deterministic: every reduction has a fixed order for a given device. Atomics only count or
// flag finished partial results (reduce.cuh's last block, the stream-K GEMM update's split
// tiles, kernels/cuda/gemm/gemm.h); no kernel adds values atomically.
// Launchers never allocate (reduce_*, layernorm_grad_gamma* and mse_loss use ctx.scratch) and never
// synchronize, so they can be captured into a CUDA Graph.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/gemm/gemm.h"
#include "kernels/cuda_options.h"
#include "graph/conv.h"
#include "kernels/op_call.h"
#include "kernels/op_call_check.h"

namespace tg::kernels {

namespace cuda {
class LtCache;
class LtGemm;
class ConvDnn;
class AttnDnn;
}  // namespace cuda

struct CudaExecContext {
  // The backend's kernel choices (kernels/cuda_options.h): which GEMM kernels gemm_op and
  // prepare_cuda route to, and whether launches use PDL (LaunchScope below).
  CudaBackendOptions options;
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  bool tf32 = false;
  // The cuBLASLt GEMMs (kernels/cuda/gemm/gemm_lt.h) and the workspace they run with unless the call
  // brings its own (OpCall::workspace, the static executor's arena).
  cuda::LtCache* lt = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  // Stream-ordered scratch owned by the backend (partial sums of reduce_*,
  // layernorm_grad_gamma and mse_loss). Null is allowed: layernorm_grad_gamma then throws
  // std::invalid_argument unless its rows fit one block, the others run on fewer blocks.
  float* scratch = nullptr;
  size_t scratch_bytes = 0;
  // The stream-K GEMM update's workspace (matmul_sgd_momentum_streamk), owned by the backend,
  // zeroed once; null (the tiled kernel) until the backend prepares a GEMM update with that
  // form on (options.gemm_update_streamk).
  void* update_workspace = nullptr;
  size_t update_workspace_bytes = 0;
  // The backend's cuDNN convolutions (kernels/cuda/conv_cudnn.h), run in the call's workspace
  // or `workspace` above; null (options.conv_cudnn off): the direct kernels.
  cuda::ConvDnn* dnn = nullptr;
  // The backend's cuDNN fused attention (kernels/cuda/attention_cudnn.h), run in the call's
  // workspace or one of its own; null (options.attention_cudnn off): the own kernels.
  cuda::AttnDnn* attn_dnn = nullptr;
};

// The entry: enqueues one op on ctx.stream. Throws std::invalid_argument naming the
// op and the tensor when the call is malformed, tg::CudaError when CUDA fails.
void run_cuda(const OpCall& call, const CudaExecContext& ctx);

namespace cuda {

// ---- the GEMM family: kernels/cuda/gemm/gemm.h, included above ------------------------

// ---- launching (launch.cu) --------------------------------------------------------
// Programmatic dependent launch (kernels/cuda/pdl.cuh): used where the device has it
// (compute capability >= 9.0) and the backend's options allow it (CudaBackendOptions::pdl,
// on by default; a captured CUDA Graph keeps what it was captured with). The launchers
// below take a stream, not a context, so run_cuda hands its context's choice to the
// launches of the op it runs through a LaunchScope on its thread; code that calls the
// launchers directly opens one itself, else PDL is on where the device has it.
class LaunchScope {
 public:
  explicit LaunchScope(bool pdl);
  ~LaunchScope();
  LaunchScope(const LaunchScope&) = delete;
  LaunchScope& operator=(const LaunchScope&) = delete;

 private:
  bool was_;
};
bool pdl_active();  // for the current device, in this thread's LaunchScope

// ---- elementwise (elementwise.cu), n elements -------------------------------------
// The elementwise, activation, bias and layout launchers take their tensors' dtype `dt`
// (every tensor of the call has it; f32 when left out) and run it as kernels/cuda/storage.h
// says: f32 arithmetic, one rounding per store.
void add(const void* a, const void* b, void* y, int64_t n, cudaStream_t s, DType dt = DType::F32);
void sub(const void* a, const void* b, void* y, int64_t n, cudaStream_t s, DType dt = DType::F32);
void mul(const void* a, const void* b, void* y, int64_t n, cudaStream_t s, DType dt = DType::F32);
void scale(const void* x, float alpha, void* y, int64_t n, cudaStream_t s, DType dt = DType::F32);
void fill(float* y, float value, int64_t n, cudaStream_t s);
// An exact alias is a no-op.
void copy(const void* x, void* y, int64_t n, cudaStream_t s, DType dt = DType::F32);
// y = x in y's dtype, each element rounded as graph/float_formats.h rounds (a copy when the
// dtypes agree); x and y do not overlap.
void cast(const TensorView& x, const TensorView& y, cudaStream_t s);
// where: cond != 0 ? a : b over the call's broadcast shapes (graph/broadcast.h), a and b in
// the output's dtype, cond i32, i64 or f32; each element's bits copied.
void where(const OpCall& c, cudaStream_t s);
// attrs.program (graph/ew_program.h) over the call's inputs in one kernel: a [cols] input
// is read at every row; each step rounds as its unfused op's kernel does (16-bit: the chain
// in f32 registers, the store rounded once).
void fused_elementwise(const OpCall& c, cudaStream_t s);

// ---- activations (activation.cu) ----------------------------------------------------
void relu(const void* x, void* y, int64_t n, cudaStream_t s, DType dt = DType::F32);
void relu_grad(const void* dy, const void* y, void* dx, int64_t n, cudaStream_t s, DType dt = DType::F32);
void gelu(const void* x, void* y, int64_t n, cudaStream_t s, DType dt = DType::F32);
void gelu_grad(const void* dy, const void* x, void* dx, int64_t n, cudaStream_t s, DType dt = DType::F32);
// The formulas of kernels/cpu/cpu_kernels.h in float math. tanh, exp and log carry _op:
// a function of this namespace named exp would hide ::exp from the kernels in it.
void tanh_op(const void* x, void* y, int64_t n, cudaStream_t s, DType dt = DType::F32);
void tanh_grad(const void* dy, const void* y, void* dx, int64_t n, cudaStream_t s, DType dt = DType::F32);
void sigmoid(const void* x, void* y, int64_t n, cudaStream_t s, DType dt = DType::F32);
void sigmoid_grad(const void* dy, const void* y, void* dx, int64_t n, cudaStream_t s, DType dt = DType::F32);
void exp_op(const void* x, void* y, int64_t n, cudaStream_t s, DType dt = DType::F32);
void log_op(const void* x, void* y, int64_t n, cudaStream_t s, DType dt = DType::F32);
void log_grad(const void* dy, const void* x, void* dx, int64_t n, cudaStream_t s, DType dt = DType::F32);
void gelu_erf(const void* x, void* y, int64_t n, cudaStream_t s, DType dt = DType::F32);
void gelu_erf_grad(const void* dy, const void* x, void* dx, int64_t n, cudaStream_t s, DType dt = DType::F32);

// ---- bias (bias.cu) -------------------------------------------------------------------
void bias_add(const void* x, const void* bias, void* y, int64_t rows, int64_t cols, cudaStream_t s,
              DType dt = DType::F32);

// ---- optimizer updates (optimizer.cu), in place -----------------------------------------
void sgd(float* p, const float* g, float lr, int64_t n, cudaStream_t s);
void sgd_momentum(float* p, const float* g, float* v, float lr, float momentum, int64_t n, cudaStream_t s);
// sgd_multi, sgd_momentum_multi: every (param, grad[, velocity]) group of the call in one
// launch per kMultiTensors groups, with sgd's and sgd_momentum's arithmetic; with a
// found-inf flag (the call's last input, read on the device) nonzero, nothing is written.
// sgd and sgd_momentum with the flag run here too, and sgd_multi_cast and
// sgd_momentum_multi_cast, which round each new parameter into its copy (weight_copy.cuh).
constexpr int kMultiTensors = 64;
void multi_update(const OpCall& c, cudaStream_t s);
// adamw, adamw_multi and adamw_multi_cast (adamw.cu, the last with the copy as multi_update
// writes it): every (param, grad, exp_avg, exp_avg_sq, step) group
// of the call, kernels/optimizer_math.h's arithmetic, then each step count + 1; with a
// found-inf flag (the call's last input, read on the device) nonzero, nothing is written.
void adamw(const OpCall& c, cudaStream_t s);

// ---- gradient clipping by global norm (clip.cu) -----------------------------------------
// global_norm: the chunk sums go to scratch (8 bytes per 16384 elements of all inputs; too
// little throws std::invalid_argument), then one block adds them in a fixed order.
void global_norm(const OpCall& c, float* scratch, size_t scratch_bytes, cudaStream_t s);
void clip_by_norm(const float* g, const float* norm, float max_norm, float* y, int64_t n, cudaStream_t s);

// ---- dynamic loss scaling (loss_scale.cu), as kernels/cpu/cpu_kernels.h describes ---------
void unscale(const float* g, const float* scale, float* out, int64_t n, cudaStream_t s);
void found_inf(const float* x, const float* found, float* out, int64_t n, cudaStream_t s);
void update_scale(float* scaler, const float* found, const Attrs& at, cudaStream_t s);

// ---- softmax over the last axis (softmax.cu) ------------------------------------------
// alpha: softmax(alpha x) and alpha * softmax_grad, a scale folded in (1: none).
void softmax_rows(const float* x, float* y, int64_t rows, int64_t cols, float alpha, cudaStream_t s);
void softmax_grad_rows(const float* dy, const float* y, float* dx, int64_t rows, int64_t cols, float alpha,
                       cudaStream_t s);
// softmax or softmax_grad in the call's dtype (f32, bf16, f16): f32's arithmetic and
// order, each output rounded once (the launchers above are its f32 form).
void softmax_op(const OpCall& c, const CallGeometry& g, cudaStream_t s);

// ---- fused attention (attention.cu, graph/attention.h) ------------------------------------
// attention, attention_lse, attention_grad and attention_fwd_lse (the first two's kernels) in
// the call's dtype; heads of at most 128 dims.
void attention_op(const OpCall& c, cudaStream_t s);

// ---- layernorm over the last axis (layernorm.cu) ----------------------------------------
void layernorm_rows(const float* x, const float* gamma, const float* beta, float* y, int64_t rows, int64_t cols,
                    float eps, cudaStream_t s);
void layernorm_grad_x_rows(const float* dy, const float* x, const float* gamma, float* dx, int64_t rows,
                           int64_t cols, float eps, cudaStream_t s);
// dgamma[j] = sum over rows of dy * xhat, dbeta[j] = sum over rows of dy (skipped when
// dbeta is null), in one pass over dy and x (layernorm_params.cu), summed over rows in an
// order that depends only on row positions: zero rows appended leave both bit for bit.
// scratch: 8 bytes per output column (2 per column with dbeta) and group of rows, 8 MiB
// at most (the backend's); it may be null when rows fit one group (a few dozen). Throws
// std::invalid_argument when it is needed and too small.
void layernorm_grad_gamma_beta(const float* dy, const float* x, float* dgamma, float* dbeta, int64_t rows,
                               int64_t cols, float eps, float* scratch, size_t scratch_bytes, cudaStream_t s);
void layernorm_grad_gamma(const float* dy, const float* x, float* dgamma, int64_t rows, int64_t cols, float eps,
                          float* scratch, size_t scratch_bytes, cudaStream_t s);
// dgamma as layernorm_grad_gamma and dbeta = the sum of dy's rows (layernorm_grad_params).
void layernorm_grad_params(const float* dy, const float* x, float* dgamma, float* dbeta, int64_t rows, int64_t cols,
                           float eps, float* scratch, size_t scratch_bytes, cudaStream_t s);
// Per row: stats[2r] = mean, stats[2r+1] = rstd, as layernorm computes them; T is float,
// or a 16-bit element type of kernels/cuda/storage.h.
template <typename T>
void layernorm_row_stats(const T* x, float* stats, int64_t rows, int64_t cols, float eps, cudaStream_t s);
// The layernorm family in the call's dtype (f32, bf16, f16), f32's arithmetic and order,
// each output rounded once: layernorm and layernorm_grad_x (layernorm.cu);
// layernorm_grad_gamma and layernorm_grad_params (layernorm_params.cu, with ctx.scratch).
void layernorm_op(const OpCall& c, const CallGeometry& g, cudaStream_t s);
void layernorm_params_op(const OpCall& c, const CallGeometry& g, const CudaExecContext& ctx);

// ---- reductions over one axis (reduce.cu) ---------------------------------------------
// The sum's order depends only on positions along the axis (reduce.cuh): zero rows
// appended to the axis leave every output bit unchanged. scratch (optional: 8 bytes per
// output and partial sum, i.e. per 8192 values of a contiguous axis, or 32 per output
// of a strided one) lets a long axis with few outputs spread over more blocks; without
// it, or when it is too small, the result has the same bits, only slower.
void reduce_sum(const float* x, float* y, int64_t outer, int64_t len, int64_t inner, void* scratch,
                size_t scratch_bytes, cudaStream_t s);
void reduce_mean(const float* x, float* y, int64_t outer, int64_t len, int64_t inner, void* scratch,
                 size_t scratch_bytes, cudaStream_t s);
// reduce_sum or reduce_mean in the call's dtype (f32, bf16, f16), with ctx.scratch: the
// sums of the f32 launchers above, in their order, each output rounded once.
void reduce_op(const OpCall& c, const CallGeometry& g, const CudaExecContext& ctx);

// ---- losses (loss.cu) -----------------------------------------------------------------
// scratch (optional, 8 bytes per chunk of 16384 elements): lets many blocks share the
// sum; without it (or when it is too small) one block does it all, to the same bits.
void mse_loss(const float* p, const float* t, float* loss, int64_t n, void* scratch, size_t scratch_bytes,
              cudaStream_t s);
void mse_loss_grad(const float* p, const float* t, const float* dloss, float* dp, int64_t n, cudaStream_t s);
// The first count[0] elements only, bit for bit mse_loss on them alone; count is read
// on the device (a CUDA Graph keeps working when it changes), and a count that is not
// an integer in [1, n] gives a NaN loss.
void padded_mse_loss(const float* p, const float* t, const float* count, float* loss, int64_t n, void* scratch,
                     size_t scratch_bytes, cudaStream_t s);
// mse_loss_grad's bits on the first count[0] elements, 0 past them; NaN everywhere for
// a count that is not an integer in [1, n].
void padded_mse_loss_grad(const float* p, const float* t, const float* count, const float* dloss, float* dp, int64_t n,
                          cudaStream_t s);
// Labels i32, i64 or f32 class indices; rows labelled ignore_index count nowhere (their
// gradient rows are 0); every row ignored gives a NaN loss, as torch does. With scratch
// for a double a row the rows are spread over the device; the bits are the same either way.
// The logits (and dx) are of dtype dt, any float dtype; the loss and dloss are f32. A row
// holds cols values, the first `classes` of them the classes; dx is 0 past them.
void cross_entropy(const void* logits, const TensorView& labels, float* loss, int64_t rows, int64_t cols,
                   int64_t classes, int64_t ignore_index, void* scratch, size_t scratch_bytes, cudaStream_t s,
                   DType dt = DType::F32);
void cross_entropy_grad(const void* logits, const TensorView& labels, const float* dloss, void* dx, int64_t rows,
                        int64_t cols, int64_t classes, int64_t ignore_index, cudaStream_t s, DType dt = DType::F32);

// ---- embedding (embedding.cu) and casts over integers (ints.cu) ----------------------
// embedding: out[t, :] = table[ids[t], :] (a row of zeros for an id outside [0, g.len));
// embedding_grad: dtable[v, :] = sum of the dy rows whose id is v, in ascending position,
// f32, without atomics (ids outside the table are dropped). g: rows = ids, cols = dim,
// len = vocabulary (check_op_call).
void embedding(const TensorView& table, const TensorView& ids, const TensorView& out, const CallGeometry& g,
               cudaStream_t s);
void embedding_grad(const TensorView& dy, const TensorView& ids, const TensorView& dtable, const CallGeometry& g,
                    cudaStream_t s);
// dropout (dropout.cu): y = x * (keep ? 1 / (1 - p) : 0), the mask of kernels/philox.h from the
// rng state (i64 [2], read on the device) and attrs.rng_stream; x and y of one float dtype.
// rng_advance: rng[1] += 1 on the device.
void dropout(const TensorView& x, const TensorView& rng, const TensorView& y, int64_t n, const Attrs& at,
             cudaStream_t s);
void rng_advance(const TensorView& rng, cudaStream_t s);
// cast where either side is i32 or i64 (elementwise.cu's cast hands these over).
void cast_ints(const TensorView& x, const TensorView& y, cudaStream_t s);

// ---- layout (layout.cu): moves of elements, never arithmetic, so any dtype is its bits --
void transpose(const void* x, const int64_t* in_dims, int rank, const int* perm, void* y, cudaStream_t s,
               DType dt = DType::F32);
// x [outer, inner] repeated `size` times along a new middle axis: y [outer, size, inner].
void broadcast(const void* x, void* y, int64_t outer, int64_t size, int64_t inner, cudaStream_t s,
               DType dt = DType::F32);
// conv2d, its backward ops and the pools (kernels/cuda/conv.cu): direct kernels, one thread per
// output element through the element functions of graph/conv.h that the CPU reference runs;
// in the call's dtype (f32, bf16, f16), as is the batchnorm family. run_cuda sends the three
// convolutions to cuDNN first (kernels/cuda/conv_cudnn.h) when the backend has it.
void conv_op(const OpCall& c, const ConvGeometry& g, cudaStream_t s);
// max_pool2d and max_pool2d_grad in 32-bit index arithmetic (pool.cu): false, launching
// nothing, for another op or a tensor with an index past 32 bits.
bool max_pool_op(const OpCall& c, const ConvGeometry& g, cudaStream_t s);
// The fused convolutions' epilogue (graph/conv.h) in place over a convolution already in
// c.out: what conv_cudnn.cpp runs after cuDNN's convolution when its fused call cannot.
void conv_epilogue(const OpCall& c, const ConvGeometry& g, cudaStream_t s);
// The batchnorm family (kernels/cuda/batchnorm.cu): each channel's sums split over the whole
// device into partial sums in `scratch` (at least batch_norm_scratch_bytes(g) bytes; less:
// std::invalid_argument), combined in a fixed order, then one elementwise pass.
void batch_norm_op(const OpCall& c, const BatchNormGeometry& g, void* scratch, size_t scratch_bytes, cudaStream_t s);
size_t batch_norm_scratch_bytes(const BatchNormGeometry& g);
// concat (one launch per input) and slice (kernels/block_copy.h), in kernels/cuda/layout.cu,
// in the output's dtype.
void concat(const OpCall& c, const CallGeometry& g, cudaStream_t s);
void slice(const OpCall& c, const CallGeometry& g, cudaStream_t s);

}  // namespace cuda
}  // namespace tg::kernels
