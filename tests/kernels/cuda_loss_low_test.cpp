// cross_entropy and cross_entropy_grad on bf16 and f16 logits (graph/op.h kTypeLogits) on
// the GPU: the loss is bit for bit the f32 kernel's on the widened logits, the gradient that
// f32 gradient rounded once to the logits' dtype; both agree with the CPU reference in the
// same dtype. Every row frame of rows.cuh, the device-wide and the one-block loss, i32, i64
// and f32 labels, ignored rows, unaligned pointers, the gradient in the logits' own memory.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cuda/cuda_kernels.h"
#include "tests/gpu_skip.h"
#include "tests/kernels/cuda_op_harness.h"

namespace tg::testing {

namespace {

struct CeSize {
  int64_t rows, cols;
};
// The 4-wide frame (100, 1024), warp rows (7), block rows (3000), the re-reading frame past
// 8192 columns (9001) and a GPT-2 vocabulary over enough rows for the device-wide loss.
const CeSize kCeSizes[] = {{37, 7}, {65, 100}, {9, 1024}, {5, 3000}, {3, 9001}, {16, 50257}};

OpCase ce_case(OpKind op, CeSize z, DType dt, DType labels, int64_t ignore, bool unaligned, uint64_t seed) {
  OpCase c;
  c.op = op;
  c.in = op == OpKind::cross_entropy ? std::vector<Shape>{Shape{z.rows, z.cols}, Shape{z.rows}}
                                     : std::vector<Shape>{Shape{z.rows, z.cols}, Shape{z.rows}, Shape{1}};
  c.out = op == OpKind::cross_entropy ? Shape{1} : Shape{z.rows, z.cols};
  c.attrs.ignore_index = ignore;
  c.dtype = dt;
  c.labels_input = 1;
  c.labels_classes = z.cols;
  c.labels_dtype = labels;
  c.unaligned = unaligned;
  c.seed = seed;
  // The f32 tolerance of tests/kernels/cuda_rows_test.cpp, plus one 16-bit ulp on the gradient.
  c.tol = op == OpKind::cross_entropy ? Tol{1e-5, 1e-5} : low_precision_tol(Tol{2e-6, 2e-5}, dt);
  return c;
}

}  // namespace

TEST_CASE("cuda cross_entropy(_grad) on bf16 and f16 logits: the f32 kernels' bits on the widened logits, and the CPU's") {
  TG_REQUIRE_GPU();
  uint64_t seed = 500;
  for (OpKind op : {OpKind::cross_entropy, OpKind::cross_entropy_grad})
    for (DType dt : {DType::BF16, DType::F16})
      for (const CeSize& z : kCeSizes)
        for (DType labels : {DType::I32, DType::I64, DType::F32})
          for (bool unaligned : {false, true}) {
            // ignore_index 1, a class the labels are drawn from, ignores the rows labelled 1.
            OpCase c = ce_case(op, z, dt, labels, labels == DType::I64 ? -100 : 1, unaligned, seed++);
            CHECK(run_case_vs_f32(c) == 0);
            CHECK(run_case(c) == 0);
            if (op == OpKind::cross_entropy_grad && !unaligned) {
              c.alias_input = 0;  // the gradient over the logits (the op table's alias column)
              CHECK(run_case_vs_f32(c) == 0);
            }
          }
}

// The device-wide loss (scratch for a double a row) and the one-block loss give the same
// bits in 16 bits too, and those of the f32 loss on the widened logits.
TEST_CASE("cuda cross_entropy on bf16 logits: spread over the device == in one block == f32, bitwise") {
  TG_REQUIRE_GPU();
  const cudaStream_t s = backend().stream();
  std::mt19937 gen(91);
  for (DType dt : {DType::BF16, DType::F16})
    for (const CeSize& z : {CeSize{4096, 100}, CeSize{1024, 500}, CeSize{64, 50257}}) {
      const int64_t rows = z.rows, cols = z.cols;  // past 2^18 logits: the spread path
      CAPTURE(cols);
      std::vector<float> x(static_cast<size_t>(rows * cols));
      std::normal_distribution<float> nd(0.0f, 3.0f);
      for (float& v : x) v = round_to_dtype(nd(gen), dt);
      std::vector<int64_t> labels(static_cast<size_t>(rows));
      std::uniform_int_distribution<int64_t> cls(0, cols - 1);
      for (int64_t r = 0; r < rows; ++r) labels[static_cast<size_t>(r)] = r % 5 == 3 ? -100 : cls(gen);
      const DevTensor low(x, false, dt), wide(x, false, DType::F32);
      cuda::DeviceBuffer dl = cuda::DeviceBuffer::allocate(labels.size() * sizeof(int64_t));
      cuda::DeviceBuffer loss = cuda::DeviceBuffer::allocate(3 * sizeof(float));
      cuda::DeviceBuffer scratch = cuda::DeviceBuffer::allocate(static_cast<size_t>(rows) * sizeof(double));
      TG_CUDA_CHECK(cudaMemcpy(dl.get(), labels.data(), dl.bytes(), cudaMemcpyHostToDevice));
      TG_CUDA_CHECK(cudaDeviceSynchronize());
      const kernels::TensorView lv{dl.as<float>(), Shape{rows}, DType::I64};
      float* out = loss.as<float>();
      kernels::cuda::cross_entropy(low.ptr, lv, out, rows, cols, cols, -100, scratch.get(), scratch.bytes(), s, dt);
      kernels::cuda::cross_entropy(low.ptr, lv, out + 1, rows, cols, cols, -100, nullptr, 0, s, dt);
      kernels::cuda::cross_entropy(wide.ptr, lv, out + 2, rows, cols, cols, -100, scratch.get(), scratch.bytes(), s);
      float got[3];
      TG_CUDA_CHECK(cudaStreamSynchronize(s));
      TG_CUDA_CHECK(cudaMemcpy(got, out, sizeof(got), cudaMemcpyDeviceToHost));
      CHECK(std::isfinite(got[0]));
      CHECK(std::memcmp(&got[0], &got[1], sizeof(float)) == 0);
      CHECK(std::memcmp(&got[0], &got[2], sizeof(float)) == 0);
    }
}

}  // namespace tg::testing
