#pragma once
// The CPU reference kernels: the launcher layer over raw host pointers and sizes,
// and the entry run_cpu that maps an OpCall onto them.
//
// These definitions are THE semantics of every op. The CUDA kernels follow the
// same formulas; where the CPU reference accumulates in double the CUDA kernel may
// accumulate in float, and tests compare the two with atol + rtol*|ref|.
//
// Conventions
//  - Row-major, contiguous. "rows x cols" means the last axis is `cols` and every
//    leading axis is folded into `rows` (Shape::rows(), Shape::last()).
//  - Plain float arithmetic (add, sub, mul, scale, bias_add, relu*, sgd*, mse_loss_grad,
//    fill, copy) is done in float exactly as written, so another backend can match
//    it bit for bit. Transcendentals (exp, log, tanh) and reductions are computed in
//    double and rounded to float once at the end.
//  - Deterministic: the same inputs give the same bits on every run. Every loop has
//    a fixed order. OpenBLAS sgemm is deterministic for a fixed thread count, but its
//    bits depend on that count (a thread's edge tiles take other kernels) and on the
//    CPU model (kernels are picked at run time): matmul results are reproducible on
//    one machine with one set_cpu_blas_threads setting, not across machines.
//  - Alias-safe (out.data may equal an input's data, exactly, never a partial
//    overlap): every elementwise op, bias_add, softmax, softmax_grad, layernorm,
//    layernorm_grad_x(_acc), mse_loss_grad, cross_entropy_grad, copy, sgd*. NOT alias-safe
//    (run_cpu rejects out == in): matmul, reduce_*, broadcast, transpose,
//    layernorm_grad_gamma, mse_loss, cross_entropy.
//  - Kernels never allocate and never fail on valid sizes. Labels that are not an
//    integer class in [0, classes) are rejected with std::invalid_argument.
#include <cstdint>

#include "graph/conv.h"
#include "kernels/op_call.h"
#include "kernels/op_call_check.h"

namespace tg::kernels {

// The entry: runs one op now. Throws std::invalid_argument naming the op and the
// offending tensor when the call is malformed (wrong input count, null data,
// sizes that do not fit the op, an aliased output for an op that cannot alias).
void run_cpu(const OpCall& call);
// A call with bf16 or f16 views (widen.cpp): inputs widened into f32 scratch, run_cpu on
// it, each output rounded once to its dtype. run_cpu calls it for such calls.
void run_cpu_widened(const OpCall& call);

// ---- matmul (matmul.cpp) --------------------------------------------------------
// The OpenBLAS thread count every cpu_sgemm uses (process-wide). The default is
// OpenBLAS's own: OPENBLAS_NUM_THREADS, else all cores. n must be >= 1.
void set_cpu_blas_threads(int n);
int cpu_blas_threads();
// C[m,n] = op(A) op(B), op(X) = X or X^T; A is [m,k] (or [k,m] when trans_a), B is
// [k,n] (or [n,k] when trans_b), all row-major with leading dims lda, ldb, ldc. C is
// overwritten (beta = 0). cblas_sgemm.
void cpu_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
               const float* b, int64_t ldb, float* c, int64_t ldc);
// `batch` independent products with tightly packed operands: A_i = a + i*stride_a,
// B_i = b + i*stride_b (stride_b = 0 shares one B), C_i = c + i*m*n.
void cpu_sgemm_batched(bool trans_a, bool trans_b, int64_t batch, int64_t m, int64_t n, int64_t k,
                       const float* a, int64_t stride_a, const float* b, int64_t stride_b, float* c);
// The op as shape inference defines it (graph/shape_inference.cpp):
//  - A [.., m, k] rank >= 2, B [k, n]: with !trans_a the leading dims of A fold into
//    m (one sgemm); with trans_a each leading index is one product with shared B.
//  - A [b, m, k], B [b, k, n]: b products.
// Dims are given as in the tensors' shapes (before transposition).
void cpu_matmul(bool trans_a, bool trans_b, const float* a, const int64_t* a_dims, int a_rank,
                const float* b, const int64_t* b_dims, int b_rank, float* c);
// The fused GEMMs of the graph passes (linear, linear_add, matmul_add, matmul_bias_grad):
// the product, then the ops it fuses, each as its own kernel computes it, so a fused graph
// gives the unfused graph's bits on the CPU.
void cpu_gemm_op(const OpCall& c);
// matmul_heads (graph/heads.h): head views gathered into packed matrices, the packed
// product (cpu_matmul), the result scattered when it is a head view: the bits of the
// transposes and the batched matmul it replaces.
void cpu_matmul_heads(const OpCall& c);
// attention, attention_lse, attention_grad and attention_fwd_lse (the first two into out and
// out2) (kernels/cpu/attention.cpp, graph/attention.h).
void cpu_attention_op(const OpCall& c);
// attention_lse's f32 result (lse, 0) pairs, rows of them, made the pairs a dt store keeps
// (graph/attention.h split_lse): how a 16-bit call keeps the statistic's precision.
void cpu_attention_split_lse(float* pairs, int64_t rows, DType dt);
// conv2d, its backward ops and the pools (kernels/cpu/conv.cpp): every output element by
// its element function of graph/conv.h, which the CUDA kernels share.
void cpu_conv_op(const OpCall& c, const ConvGeometry& g);
// The batchnorm family (kernels/cpu/batchnorm.cpp): statistics per channel in double.
void cpu_batch_norm_op(const OpCall& c, const BatchNormGeometry& g);
// The batch-invariant product (kernels/gemm/gemm_mode.h) of one contiguous matrix pair:
// A [m, k] ([k, m] with trans_a), B [k, n] ([n, k] with trans_b), C [m, n].
void cpu_gemm_invariant(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                        float* c);

// ---- elementwise (elementwise.cpp), n elements --------------------------------
void cpu_add(const float* a, const float* b, float* y, int64_t n);    // y = a + b
void cpu_sub(const float* a, const float* b, float* y, int64_t n);    // y = a - b
void cpu_mul(const float* a, const float* b, float* y, int64_t n);    // y = a * b
void cpu_scale(const float* x, float alpha, float* y, int64_t n);     // y = alpha * x
void cpu_fill(float* y, float value, int64_t n);                      // y = value
void cpu_copy(const float* x, float* y, int64_t n);                   // y = x (memmove)
// where: cond != 0 ? a : b over the call's broadcast shapes (graph/broadcast.h); cond i32,
// i64 or f32, a and b f32.
void cpu_where(const OpCall& c);
// fused_elementwise: attrs.program (graph/ew_program.h) over the call's inputs, tile by
// tile through the kernels of the ops it fuses (cpu_add, cpu_relu, cpu_gelu, ...), so
// that it gives the unfused chain's bits, in every float dtype and across casts. A [cols]
// input is read at every row.
void cpu_fused_elementwise(const OpCall& c);

// ---- bias (bias.cpp) -------------------------------------------------------------
// y[r, j] = x[r, j] + bias[j]
void cpu_bias_add(const float* x, const float* bias, float* y, int64_t rows, int64_t cols);

// ---- activations (activation.cpp), n elements ---------------------------------
// relu:      y = x > 0 ? x : 0            (so relu(-0) = 0 and relu(NaN) = 0)
// relu_grad: dx = y > 0 ? dy : 0           (y is relu's output)
// gelu:      y = 0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3)
// gelu_grad: dx = dy * (0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3*0.044715 x^2)),
//            t = tanh(u)                   (x is gelu's input)
void cpu_relu(const float* x, float* y, int64_t n);
void cpu_relu_grad(const float* dy, const float* y, float* dx, int64_t n);
void cpu_gelu(const float* x, float* y, int64_t n);
void cpu_gelu_grad(const float* dy, const float* x, float* dx, int64_t n);
// tanh:          y = tanh(x)
// tanh_grad:     dx = dy (1 - y^2)          (y is tanh's output)
// sigmoid:       y = 1 / (1 + exp(-x))
// sigmoid_grad:  dx = dy y (1 - y)           (y is sigmoid's output)
// exp:           y = exp(x)                  (its gradient is mul(dy, y))
// log:           y = log(x)                  (natural; NaN for x < 0, -inf at 0)
// log_grad:      dx = dy / x                 (x is log's input)
// gelu_erf:      y = 0.5 x (1 + erf(x / sqrt(2)))
// gelu_erf_grad: dx = dy (0.5 (1 + erf(x / sqrt(2))) + x exp(-x^2 / 2) / sqrt(2 pi))
// The gradients too are computed in double and rounded once.
void cpu_tanh(const float* x, float* y, int64_t n);
void cpu_tanh_grad(const float* dy, const float* y, float* dx, int64_t n);
void cpu_sigmoid(const float* x, float* y, int64_t n);
void cpu_sigmoid_grad(const float* dy, const float* y, float* dx, int64_t n);
void cpu_exp(const float* x, float* y, int64_t n);
void cpu_log(const float* x, float* y, int64_t n);
void cpu_log_grad(const float* dy, const float* x, float* dx, int64_t n);
void cpu_gelu_erf(const float* x, float* y, int64_t n);
void cpu_gelu_erf_grad(const float* dy, const float* x, float* dx, int64_t n);

// ---- softmax over the last axis (softmax.cpp) ----------------------------------
// softmax:      y[j] = exp(a x[j] - max) / sum_k exp(a x[k] - max)   (a = alpha, 1 by default)
// softmax_grad: dx[j] = a (y[j] * (dy[j] - sum_k dy[k] y[k]))         (y is softmax's output)
// alpha folds a scale before softmax (and after its gradient) into the row kernel.
void cpu_softmax_rows(const float* x, float* y, int64_t rows, int64_t cols, float alpha = 1.0f);
void cpu_softmax_grad_rows(const float* dy, const float* y, float* dx, int64_t rows, int64_t cols, float alpha = 1.0f);

// ---- layernorm over the last axis (layernorm.cpp) ------------------------------
// Per row, two passes: mean = sum x / cols; var = sum (x - mean)^2 / cols (biased);
// rstd = 1 / sqrt(var + eps); xhat = (x - mean) rstd.
// layernorm:            y = xhat * gamma + beta
// layernorm_grad_x:     g = dy * gamma;  dx = rstd (g - mean(g) - xhat mean(g xhat))
// layernorm_grad_gamma: dgamma[j] = sum over rows of dy[r, j] xhat[r, j]
// (dbeta is reduce_sum of dy over the rows.) The grad ops take the eps of the forward.
void cpu_layernorm_rows(const float* x, const float* gamma, const float* beta, float* y, int64_t rows,
                        int64_t cols, float eps);
// With acc (layernorm_grad_x_acc): dx = acc + the float-rounded dx, the bits of a separate add.
void cpu_layernorm_grad_x_rows(const float* dy, const float* x, const float* gamma, float* dx, int64_t rows,
                               int64_t cols, float eps, const float* acc = nullptr);
// dgamma and dbeta = sum of dy's rows, as layernorm_grad_gamma and reduce_sum give them.
void cpu_layernorm_grad_params(const float* dy, const float* x, float* dgamma, float* dbeta, int64_t rows,
                               int64_t cols, float eps);
void cpu_layernorm_grad_gamma(const float* dy, const float* x, float* dgamma, int64_t rows, int64_t cols,
                              float eps);
// Both parameter gradients in one pass: dgamma as above, dbeta[j] = sum over rows of
// dy[r, j] (skipped when dbeta is null; then it is cpu_layernorm_grad_gamma, bit for bit).
// Each column is summed over the rows in order, in double.
void cpu_layernorm_grad_gamma_beta(const float* dy, const float* x, float* dgamma, float* dbeta, int64_t rows,
                                   int64_t cols, float eps);

// ---- reductions and broadcast (reduce.cpp) --------------------------------------
// The input viewed as [outer, len, inner] around the reduced axis:
// reduce_sum:  y[o, i] = sum_a x[o, a, i];   reduce_mean: the same / len.
// broadcast:   the output viewed as [outer, size, inner]: y[o, s, i] = x[o, i].
void cpu_reduce_sum(const float* x, float* y, int64_t outer, int64_t len, int64_t inner);
void cpu_reduce_mean(const float* x, float* y, int64_t outer, int64_t len, int64_t inner);
void cpu_broadcast(const float* x, float* y, int64_t outer, int64_t size, int64_t inner);

// ---- layout (layout.cpp) ---------------------------------------------------------
// transpose: out dim d is input dim perm[d]: y[i_0..i_{r-1}] = x[j] with j_{perm[d]} = i_d.
// reshape: a view; when y != x (an executor that gave it its own memory) it copies.
void cpu_transpose(const float* x, const int64_t* in_dims, int rank, const int* perm, float* y);
void cpu_reshape(const float* x, float* y, int64_t n);
// concat (each input's block into its place along the axis) and slice (kernels/block_copy.h).
void cpu_concat(const OpCall& c, const CallGeometry& g);
void cpu_slice(const OpCall& c, const CallGeometry& g);

// ---- losses (loss.cpp) -------------------------------------------------------------
// mse_loss:           loss[0] = sum (p - t)^2 / n
// mse_loss_grad:      s = 2 * dloss[0] / n (float);  dp = s * (p - t)
// cross_entropy:      loss[0] = sum_r (logsumexp(x[r, :]) - x[r, label_r]) / kept
// cross_entropy_grad: dx[r, j] = (softmax(x[r, :])[j] - (j == label_r)) * dloss[0] / kept
// over the rows whose label is not ignore_index (kept of them; their dx rows are 0).
// A row holds cols values of which the first `classes` are the classes (logsumexp and
// softmax over those); the columns past them are padding: read by nothing, dx 0 there.
// Labels are class indices (i32, i64, or whole numbers in f32), each in [0, classes) or
// ignore_index (tg::InputError otherwise).
void cpu_mse_loss(const float* p, const float* t, float* loss, int64_t n);
void cpu_mse_loss_grad(const float* p, const float* t, const float* dloss, float* dp, int64_t n);
// padded_mse_loss(_grad): the same over the first c = count[0] of the n elements
// (padding past them: no loss, dp = 0), bit for bit what mse_loss(_grad) gives on
// those c elements alone. count must hold an integer in [1, n] (std::invalid_argument).
void cpu_padded_mse_loss(const float* p, const float* t, const float* count, float* loss, int64_t n);
void cpu_padded_mse_loss_grad(const float* p, const float* t, const float* count, const float* dloss, float* dp,
                              int64_t n);
void cpu_cross_entropy(const float* logits, const TensorView& labels, float* loss, int64_t rows, int64_t cols,
                       int64_t classes, int64_t ignore_index);
void cpu_cross_entropy_grad(const float* logits, const TensorView& labels, const float* dloss, float* dx,
                            int64_t rows, int64_t cols, int64_t classes, int64_t ignore_index);

// ---- embedding (embedding.cpp) -----------------------------------------------------
// embedding:      out[t, :] = table[ids[t], :] for the n ids
// embedding_grad: dtable[v, :] = sum over t with ids[t] == v of dy[t, :], in ascending t, f32
// ids are i32, i64 or whole numbers in f32, each in [0, vocab) (tg::InputError otherwise).
void cpu_embedding(const float* table, int64_t vocab, int64_t dim, const TensorView& ids, float* out, int64_t n);
void cpu_embedding_grad(const float* dy, const TensorView& ids, float* dtable, int64_t vocab, int64_t dim, int64_t n);

// ---- dropout (dropout.cpp) ------------------------------------------------------------
// dropout:     y[i] = x[i] * (keep ? 1 / (1 - p) : 0), keep drawn by Philox from the rng state
//              (seed, offset: i64, or whole numbers in f32) and attrs.rng_stream (kernels/philox.h)
// rng_advance: rng[1] += 1, in place
void cpu_dropout(const float* x, const TensorView& rng, float* y, int64_t n, const Attrs& at);
void cpu_rng_advance(const TensorView& rng);
// cast, copy, reshape, slice and concat over i32 and i64 values (and cast between them and
// the float dtypes: to an integer toward zero, saturating, NaN to 0; graph/float_formats.h).
void run_cpu_ints(const OpCall& c, const CallGeometry& g);

// ---- optimizer updates, in place (optimizer.cpp) --------------------------------
// sgd:          p = p - lr * g
// sgd_momentum: v = momentum * v + g;  p = p - lr * v     (PyTorch's convention)
void cpu_sgd(float* p, const float* g, float lr, int64_t n);
void cpu_sgd_momentum(float* p, const float* g, float* v, float lr, float momentum, int64_t n);
// sgd_multi, sgd_momentum_multi: cpu_sgd / cpu_sgd_momentum on every (param, grad[, velocity]) group;
// nothing when the call has a found-inf flag (its last input) that is nonzero. sgd and
// sgd_momentum with the flag run here too, and sgd_multi_cast and sgd_momentum_multi_cast,
// which then store each group's parameter into its low-precision copy (the group's last).
void cpu_multi_update(const OpCall& c);
// The *_multi_cast updates' last step per group: the group's parameter (input `group`),
// updated, rounded to nearest even into the group's last input, the copy, as cast rounds.
void cpu_store_weight_copy(const OpCall& c, int group);
// A multi-tensor update's gradient as f32: its own data, or (bf16, f16) widened into `wide`.
const float* cpu_update_grad(const TensorView& g, std::vector<float>& wide);
// matmul_sgd_momentum (param, a, velocity, dz): cpu_sgd_momentum with the gradient a^T dz
// (a [rows, k], dz [rows, n]), computed as matmul_bias_grad's product is.
void cpu_matmul_sgd_momentum(const OpCall& c);

// ---- dynamic loss scaling (loss_scale.cpp) -------------------------------------------------
// unscale:      out = g * (1 / scale[0])   (out may be g)
// found_inf:    out[0] = 1 if found[0] != 0 or any x is an inf or a nan, else 0
// update_scale: scaler = {scale, growth tracker, skipped steps}, as torch.amp.GradScaler's
//               update: a step with found[0] != 0 multiplies the scale by backoff_factor,
//               counts a skipped step and restarts the tracker; growth_interval clean steps
//               in a row multiply it by growth_factor (kept when the product is finite).
void cpu_unscale(const float* g, const float* scale, float* out, int64_t n);
void cpu_found_inf(const float* x, const float* found, float* out, int64_t n);
void cpu_update_scale(float* scaler, const float* found, const Attrs& at);

// ---- adamw (adamw.cpp), in place: kernels/optimizer_math.h's formula --------------
// (param, grad, exp_avg, exp_avg_sq, step[1]) with attrs.lr and attrs.adam; step += 1.
void cpu_adamw(float* p, const float* g, float* m, float* v, float* step, const Attrs& at, int64_t n);
// adamw_multi: cpu_adamw on every group of five; nothing when the call has a found-inf flag
// (its last input) that is nonzero: no parameter, moment or step count moves, as
// torch.amp.GradScaler skips optimizer.step(). adamw with the flag runs here too, and
// adamw_multi_cast, whose groups of six end with the copy cpu_store_weight_copy writes.
void cpu_adamw_multi(const OpCall& c);

// ---- gradient clipping by global norm (clip.cpp) ----------------------------------
// global_norm: sqrt of the sum of every input element's square, summed in double in
// input order, then element order.
void cpu_global_norm(const OpCall& c, float* out);
// clip_by_norm: y = g * min(1, max_norm / (norm[0] + 1e-6)), the factor in f32.
void cpu_clip_by_norm(const float* g, const float* norm, float max_norm, float* y, int64_t n);
// all_reduce outside any group (a backend that joined no communicator, the interpreter): the
// mean over one rank, y = x. Backends joined to a group run it through their communicator.
void cpu_all_reduce_alone(const float* x, float* y, int64_t n);

}  // namespace tg::kernels
