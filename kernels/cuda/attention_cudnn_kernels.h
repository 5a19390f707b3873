#pragma once
// The small kernels around cuDNN's fused attention (attention_cudnn.h): what turns the ops'
// conventions (graph/attention.h) into cuDNN's and back. No cuDNN header: they build in
// every CUDA build.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "graph/shape.h"

namespace tg::kernels::cuda {

// cuDNN's padding mask takes int32 [B] query and key lengths: q[b] = seq (every query row is
// computed, graph/attention.h), kv[b] = lengths[b] (i32 or i64; f32 read as the own kernels
// read it) clamped to [0, seq]; lengths null: kv[b] = seq.
void attention_dnn_seq_lens(const void* lengths, DType lengths_dtype, int64_t batch, int64_t seq, int32_t* q,
                            int32_t* kv, cudaStream_t s);

// cuDNN's row statistics (f32, one a row, [B, heads, S]) into the ops' pairs hi + lo of the
// 16-bit dtype dt (split_lse), in place: a row's f32 and its pair are the same 4 bytes. Rows
// of a sequence whose kv length is 0 get 0 (kv null: no padding mask).
void attention_dnn_stats_to_pairs(void* stats, DType dt, int64_t rows, int64_t rows_per_batch, const int32_t* kv,
                                  cudaStream_t s);

// The pairs back to f32 statistics (into workspace) for cuDNN's backward.
void attention_dnn_pairs_to_stats(const void* pairs, DType dt, float* stats, int64_t rows, cudaStream_t s);

// The padding mask's fix-ups after cuDNN, over `parts` stacked head views [B, S, row]:
// every part of a sequence whose kv length is 0 is zeroed (no key to see: output and
// gradients 0, never NaN), and parts from `tail_from` on also get their rows at or past the
// kv length zeroed (dk and dv of masked keys; the forward passes tail_from = parts).
void attention_dnn_zero_masked(void* out, DType dt, const int32_t* kv, int parts, int tail_from, int64_t batch,
                               int64_t seq, int64_t row, cudaStream_t s);

}  // namespace tg::kernels::cuda
