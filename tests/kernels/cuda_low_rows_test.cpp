// softmax, layernorm and their gradients (layernorm_grad_x_acc too), the layernorm parameter
// gradients and the reductions in bf16 and f16 (tests/kernels/cuda_low_precision.h), and the
// layernorm gradients of a 16-bit dy beside f32 inputs: every row frame of
// rows.cuh (the 4-wide frame, warp and block rows, the re-reading frame past 8192
// columns), widths that are not a multiple of 4, unaligned pointers, the split launches of
// the reductions and of layernorm_grad_gamma that use the backend's scratch, and
// layernorm_grad_gamma's wide rows over several chunks of rows, where a 16-bit dgamma
// sums in f32 first.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/raii.h"
#include "tests/gpu_skip.h"
#include "tests/kernels/cuda_low_precision.h"

namespace tg::testing {

namespace {

// The f32 tolerances of tests/kernels/cuda_rows_test.cpp and cuda_reduce_test.cpp.
Tol row_tol(OpKind op) {
  switch (op) {
    case OpKind::softmax: return Tol{2e-6, 2e-5};
    case OpKind::softmax_grad:
    case OpKind::layernorm: return Tol{1e-5, 1e-4};
    case OpKind::layernorm_grad_x:
    case OpKind::layernorm_grad_x_acc: return Tol{5e-4, 2e-3};
    case OpKind::layernorm_grad_gamma:
    case OpKind::layernorm_grad_params: return Tol{1e-4, 1e-4};
    default: return Tol{1e-5, 1e-5};
  }
}

std::vector<Shape> row_inputs(OpKind op, int64_t rows, int64_t cols) {
  const Shape x{rows, cols}, v{cols};
  switch (op) {
    case OpKind::softmax: return {x};
    case OpKind::softmax_grad: return {x, x};
    case OpKind::layernorm: return {x, v, v};
    case OpKind::layernorm_grad_x: return {x, x, v};
    case OpKind::layernorm_grad_x_acc: return {x, x, v, x};
    default: return {x, x};  // layernorm_grad_gamma, layernorm_grad_params: (dy, x)
  }
}

}  // namespace

TEST_CASE("cuda softmax and layernorm in bf16 and f16: every row frame, odd widths, unaligned") {
  TG_REQUIRE_GPU();
  const int64_t widths[] = {5, 32, 100, 130, 1024, 1030, 3000, 9000};
  for (OpKind op : {OpKind::softmax, OpKind::softmax_grad, OpKind::layernorm, OpKind::layernorm_grad_x,
                    OpKind::layernorm_grad_x_acc}) {
    for (int64_t cols : widths) {
      const int64_t rows = cols > 1024 ? 5 : 37;
      LowCase c{"[" + std::to_string(rows) + "," + std::to_string(cols) + "]", op, {}, row_inputs(op, rows, cols),
                row_tol(op)};
      c.seed = static_cast<uint64_t>(cols);
      CHECK(check_low_both(c) == 0);
      if (cols == 100 || cols == 1024) {  // the 4-wide frame's sizes, on the scalar frame
        c.unaligned = true;
        CHECK(check_low_both(c) == 0);
      }
    }
  }
  for (OpKind op : {OpKind::softmax, OpKind::softmax_grad}) {
    LowCase c{"alpha 0.125 [9,200]", op, {}, row_inputs(op, 9, 200), row_tol(op)};
    c.attrs.alpha = 0.125f;
    CHECK(check_low_both(c) == 0);
  }
}

TEST_CASE("cuda layernorm_grad_gamma and layernorm_grad_params in bf16 and f16, with the scratch partials") {
  TG_REQUIRE_GPU();
  struct Size {
    int64_t rows, cols;
  };
  // One group of rows, several (the scratch partials and their finish), 512-thread rows,
  // and the wide rows past 4096 columns (row statistics, then the column frame).
  const Size sizes[] = {{3, 6}, {300, 100}, {1000, 130}, {260, 1024}, {70, 2500}, {40, 5000}};
  for (OpKind op : {OpKind::layernorm_grad_gamma, OpKind::layernorm_grad_params})
    for (const Size& z : sizes) {
      LowCase c{"[" + std::to_string(z.rows) + "," + std::to_string(z.cols) + "]", op, {},
                row_inputs(op, z.rows, z.cols), row_tol(op)};
      CHECK(check_low_both(c) == 0);
      c.unaligned = true;
      CHECK(check_low_both(c) == 0);
    }
}

// A 16-bit dy beside f32 x, gamma and acc (graph/op.h kTypeLowGrad: the layernorm gradients of
// an autocast step): the bits of the f32 op on dy widened first, and the CPU reference's.
// Every row frame of grad_x (4-wide, warp, block, re-reading past 8192 columns) and every
// regime of the parameter gradients (one group, scratch partials, 512-thread rows, wide rows).
TEST_CASE("cuda layernorm gradients of a bf16 or f16 dy beside f32: the widened dy's bits, and the CPU's") {
  TG_REQUIRE_GPU();
  struct Size {
    int64_t rows, cols;
  };
  const Size sizes[] = {{3, 6}, {37, 100}, {300, 768}, {70, 2500}, {40, 5000}, {5, 9000}};
  uint64_t seed = 900;
  for (OpKind op : {OpKind::layernorm_grad_x, OpKind::layernorm_grad_x_acc, OpKind::layernorm_grad_gamma,
                    OpKind::layernorm_grad_params})
    for (DType dy : {DType::BF16, DType::F16})
      for (const Size& z : sizes)
        for (bool unaligned : {false, true}) {
          OpCase c;
          c.op = op;
          c.in = row_inputs(op, z.rows, z.cols);
          const bool params = op == OpKind::layernorm_grad_gamma || op == OpKind::layernorm_grad_params;
          c.out = params ? Shape{z.cols} : Shape{z.rows, z.cols};
          c.attrs.eps = 1e-5f;
          c.tol = row_tol(op);
          c.dy_dtype = dy;
          c.unaligned = unaligned;
          c.seed = seed++;
          CHECK(run_case_vs_widened_dy(c) == 0);
          CHECK(run_case(c) == 0);
        }
}

// A scratch of 18000 bytes: f32 would take 3000 rows of 4100 columns in two chunks of 2250
// rows; a 16-bit call keeps dgamma's f32 sums at the head of the scratch (16400 bytes) and
// the row statistics of 200 rows after them, so it goes in 15 chunks.
TEST_CASE("cuda layernorm_grad_params in bf16 and f16: wide rows over several chunks of rows") {
  TG_REQUIRE_GPU();
  const int64_t rows = 3000, cols = 4100;
  for (DType dt : {DType::BF16, DType::F16}) {
    LowCase c{"[3000,4100], a small scratch", OpKind::layernorm_grad_params, {},
              row_inputs(OpKind::layernorm_grad_params, rows, cols),
              row_tol(OpKind::layernorm_grad_params)};
    const auto values = low_inputs(c, dt);
    const LowOutputs want = run_low(c, values, dt, false);
    const size_t es = static_cast<size_t>(dtype_size(dt));
    std::vector<cuda::DeviceBuffer> bufs;
    std::vector<kernels::TensorView> views;
    for (size_t i = 0; i < 2; ++i) {
      std::vector<char> bytes(values[i].size() * es);
      store_as_dtype(values[i].data(), values[i].size(), dt, bytes.data());
      bufs.push_back(cuda::DeviceBuffer::allocate(bytes.size()));
      TG_CUDA_CHECK(cudaMemcpy(bufs.back().get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
      views.push_back({bufs.back().as<float>(), c.in[i], dt});
    }
    for (int k = 0; k < 2; ++k) {
      bufs.push_back(cuda::DeviceBuffer::allocate(static_cast<size_t>(cols) * es));
      TG_CUDA_CHECK(cudaMemset(bufs.back().get(), 0xFF, static_cast<size_t>(cols) * es));
      views.push_back({bufs.back().as<float>(), Shape{cols}, dt});
    }
    const size_t scratch_bytes = 18000;
    cuda::DeviceBuffer scratch = cuda::DeviceBuffer::allocate(scratch_bytes);
    kernels::CudaExecContext ctx;
    ctx.stream = backend().stream();
    ctx.scratch = scratch.as<float>();
    ctx.scratch_bytes = scratch_bytes;
    kernels::OpCall call;
    call.op = c.op;
    call.attrs = &c.attrs;
    call.num_inputs = 2;
    call.in[0] = views[0];
    call.in[1] = views[1];
    call.out = views[2];
    call.out2 = views[3];
    TG_CUDA_CHECK(cudaDeviceSynchronize());  // the copies and the memset ran on the legacy stream
    kernels::run_cuda(call, ctx);
    TG_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
    for (int k = 0; k < 2; ++k) {
      std::vector<char> bytes(static_cast<size_t>(cols) * es);
      TG_CUDA_CHECK(cudaMemcpy(bytes.data(), views[2 + k].data, bytes.size(), cudaMemcpyDeviceToHost));
      std::vector<float> got(static_cast<size_t>(cols));
      load_from_dtype(bytes.data(), got.size(), dt, got.data());
      CHECK(compare(std::string(k == 0 ? "dgamma " : "dbeta ") + dtype_name(dt), got, k == 0 ? want.out : want.out2,
                    low_precision_tol(row_tol(OpKind::layernorm_grad_params), dt)) == 0);
    }
  }
}

TEST_CASE("cuda reduce_sum and reduce_mean in bf16 and f16: rows, columns, strided, split over the scratch") {
  TG_REQUIRE_GPU();
  struct Red {
    Shape x;
    int axis;
  };
  // Contiguous rows (4-wide and not, a few long rows split into chunks over the scratch),
  // columns (few column tiles: the split launch), a strided axis with an odd inner size.
  const Red cases[] = {{{300, 1024}, 1}, {{7, 1001}, 1}, {{4, 100003}, 1}, {{20000, 70}, 0},
                       {{3, 517, 33}, 1}, {{5}, 0},      {{64, 48, 4}, 1}};
  for (OpKind op : {OpKind::reduce_sum, OpKind::reduce_mean})
    for (const Red& r : cases) {
      LowCase c{"axis " + std::to_string(r.axis) + " of " + r.x.str(), op, {}, {r.x}, row_tol(op)};
      c.attrs.axis = r.axis;
      CHECK(check_low_both(c) == 0);
      c.unaligned = true;
      CHECK(check_low_both(c) == 0);
    }
}

}  // namespace tg::testing
