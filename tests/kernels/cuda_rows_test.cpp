// Row-wise ops: every row-length regime of rows.cuh (warp per row with 1..32 values
// per lane, block per row with registers, the re-reading fallback beyond 8192).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "graph/float_formats.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cuda/cuda_kernels.h"

#include "tests/kernels/cuda_op_harness.h"
#include "tests/gpu_skip.h"

namespace tg::testing {

namespace {

const std::vector<int64_t> kCols = {1, 7, 32, 33, 100, 257, 1000, 1023, 1024, 1025, 3000, 5000, 8192, 9001};
const std::vector<int64_t> kRows = {1, 7, 65};

constexpr Tol kRowTol{2e-6, 2e-5};

// shapes(rows, cols) gives the inputs; the output is [rows, cols] unless `scalar_out`.
template <typename Shapes>
void row_cases(OpKind op, Shapes shapes, Tol tol, bool in_place, int labels_input = -1) {
  uint64_t seed = 1000;
  for (int64_t rows : kRows)
    for (int64_t cols : kCols)
      for (bool unaligned : {false, true}) {
        OpCase c;
        c.op = op;
        c.attrs.eps = 1e-5f;
        c.in = shapes(rows, cols);
        c.out = Shape{rows, cols};
        c.tol = tol;
        c.unaligned = unaligned;
        c.labels_input = labels_input;
        c.labels_classes = cols;
        c.seed = seed++;
        TG_CHECK_CASE(c);
        if (in_place) {
          c.alias_input = 0;
          TG_CHECK_CASE(c);
        }
      }
}

std::vector<Shape> one(int64_t r, int64_t c) { return {Shape{r, c}}; }
std::vector<Shape> two(int64_t r, int64_t c) { return {Shape{r, c}, Shape{r, c}}; }

}  // namespace

TEST_CASE("cuda softmax (and in place)") { TG_REQUIRE_GPU(); row_cases(OpKind::softmax, one, kRowTol, true); }

TEST_CASE("cuda softmax_grad") {
  TG_REQUIRE_GPU();
  row_cases(OpKind::softmax_grad, two, Tol{1e-5, 1e-4}, true);
}

TEST_CASE("cuda layernorm") {
  TG_REQUIRE_GPU();
  row_cases(OpKind::layernorm, [](int64_t r, int64_t c) { return std::vector<Shape>{Shape{r, c}, Shape{c}, Shape{c}}; },
            Tol{1e-5, 1e-4}, true);
}

TEST_CASE("cuda layernorm_grad_x") {
  TG_REQUIRE_GPU();
  // cols = 1 gives xhat = 0 and dx = 0 up to rounding of rstd * (g - g): keep atol generous.
  row_cases(OpKind::layernorm_grad_x,
            [](int64_t r, int64_t c) { return std::vector<Shape>{Shape{r, c}, Shape{r, c}, Shape{c}}; },
            Tol{5e-4, 2e-3}, true);
}

TEST_CASE("cuda layernorm_grad_x_acc (and in place over dy)") {
  TG_REQUIRE_GPU();
  row_cases(OpKind::layernorm_grad_x_acc,
            [](int64_t r, int64_t c) { return std::vector<Shape>{Shape{r, c}, Shape{r, c}, Shape{c}, Shape{r, c}}; },
            Tol{5e-4, 2e-3}, true);
}

TEST_CASE("cuda layernorm_cast from f32 to bf16 and f16: the f32 layernorm's values rounded once, bitwise") {
  TG_REQUIRE_GPU();
  for (int64_t cols : {6, 64, 768, 1030, 9000})
    for (DType to : {DType::BF16, DType::F16}) {
      CAPTURE(cols);
      CAPTURE(dtype_name(to));
      const int64_t rows = 9;
      const Shape xs{rows, cols}, vs{cols};
      const DevTensor x(random_vector(rows * cols, 11 + cols), false), g(random_vector(cols, 12), false),
          b(random_vector(cols, 13), false);
      DevTensor y32(rows * cols, false), y16(rows * cols, false, to);
      Attrs at;
      at.eps = 1e-5f;
      run_op(OpKind::layernorm, {x.view(xs), g.view(vs), b.view(vs)}, y32.view(xs), at);
      at.to = to;
      run_op(OpKind::layernorm_cast, {x.view(xs), g.view(vs), b.view(vs)}, y16.view(xs), at);
      std::vector<float> want = y32.download();
      for (float& w : want) w = round_to_dtype(w, to);
      CHECK(compare("layernorm_cast", y16.download(), want, Tol{0, 0}) == 0);
    }
}

TEST_CASE("cuda softmax of long rows led by -inf (masked): finite, as on the CPU") {
  TG_REQUIRE_GPU();
  for (int64_t cols : {9001, 20000}) {
    CAPTURE(cols);
    const int64_t rows = 3;
    const Shape xs{rows, cols};
    std::vector<float> x = random_vector(rows * cols, 21 + cols);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < 2048 * (r + 1); ++j) x[static_cast<size_t>(r * cols + j)] = -INFINITY;
    std::vector<float> want(x.size());
    kernels::cpu_softmax_rows(x.data(), want.data(), rows, cols, 1.0f);
    const DevTensor dx(x, false);
    DevTensor dy(rows * cols, false);
    run_op(OpKind::softmax, {dx.view(xs)}, dy.view(xs), Attrs{});
    const std::vector<float> got = dy.download();
    for (float v : got) REQUIRE(std::isfinite(v));
    CHECK(compare("softmax", got, want, kRowTol) == 0);
  }
}

TEST_CASE("cuda cross_entropy_grad: an ignored row is exact zeros even where its logits hold inf") {
  TG_REQUIRE_GPU();
  for (int64_t cols : {64, 100, 9001}) {  // the float4 frame, the scalar frame, a row past the cache
    CAPTURE(cols);
    const int64_t rows = 4, n = rows * cols;
    const Shape xs{rows, cols};
    std::vector<float> x = random_vector(n, 31 + cols);
    x[static_cast<size_t>(cols + 3)] = INFINITY;  // row 1, ignored
    const std::vector<float> labels{2, -100, 5, 0}, dloss{1.0f};
    std::vector<float> want(static_cast<size_t>(n));
    kernels::cpu_cross_entropy_grad(x.data(), {const_cast<float*>(labels.data()), Shape{rows}}, dloss.data(),
                                    want.data(), rows, cols, cols, -100);
    const DevTensor dx(x, false), dl(labels, false), dd(dloss, false);
    DevTensor dg(n, false);
    Attrs at;
    at.ignore_index = -100;
    run_op(OpKind::cross_entropy_grad, {dx.view(xs), dl.view(Shape{rows}), dd.view(Shape{1})}, dg.view(xs), at);
    const std::vector<float> got = dg.download();
    for (int64_t j = 0; j < cols; ++j) REQUIRE(got[static_cast<size_t>(cols + j)] == 0.0f);
    for (int64_t i = 0; i < n; ++i)
      if (i / cols != 1) REQUIRE(std::isfinite(got[static_cast<size_t>(i)]));
    CHECK(compare("cross_entropy_grad", got, want, kRowTol) == 0);
  }
}

TEST_CASE("cuda cross_entropy_grad") {
  TG_REQUIRE_GPU();
  row_cases(OpKind::cross_entropy_grad,
            [](int64_t r, int64_t c) { return std::vector<Shape>{Shape{r, c}, Shape{r}, Shape{1}}; }, kRowTol, true,
            1);
}

TEST_CASE("cuda cross_entropy") {
  TG_REQUIRE_GPU();
  uint64_t seed = 3000;
  for (int64_t rows : {int64_t{1}, int64_t{7}, int64_t{1023}, int64_t{4097}})
    for (int64_t cols : {int64_t{1}, int64_t{7}, int64_t{10}, int64_t{100}, int64_t{1000}, int64_t{1025}})
      for (bool unaligned : {false, true}) {
        OpCase c;
        c.op = OpKind::cross_entropy;
        c.in = {Shape{rows, cols}, Shape{rows}};
        c.out = Shape{1};
        c.tol = Tol{1e-5, 1e-5};
        c.unaligned = unaligned;
        c.labels_input = 1;
        c.labels_classes = cols;
        c.seed = seed++;
        TG_CHECK_CASE(c);
      }
}

// cross_entropy spreads its rows over the device when it has scratch for a double a row and
// sums them in one block otherwise: both must give the same bits (the static and the
// dynamic executor, or a kernel test without scratch, may take either), ignored rows and
// a label outside the classes (NaN) included.
TEST_CASE("cuda cross_entropy spread over the device == in one block, bitwise") {
  TG_REQUIRE_GPU();
  const cudaStream_t s = backend().stream();
  std::mt19937 gen(77);
  for (int64_t rows : {int64_t{64}, int64_t{1000}, int64_t{8192}})
    for (int64_t cols : {int64_t{31}, int64_t{100}, int64_t{500}, int64_t{50257}})
      for (int bad : {0, 1}) {
        if (rows * cols < (int64_t{1} << 18)) continue;  // the spread path starts there
        if (rows * cols > (int64_t{1} << 28)) continue;
        CAPTURE(rows);
        CAPTURE(cols);
        CAPTURE(bad);
        std::vector<float> x(static_cast<size_t>(rows * cols));
        std::normal_distribution<float> nd(0.0f, 3.0f);
        for (float& v : x) v = nd(gen);
        std::vector<int64_t> labels(static_cast<size_t>(rows));
        std::uniform_int_distribution<int64_t> cls(0, cols - 1);
        for (int64_t r = 0; r < rows; ++r) labels[r] = r % 5 == 3 ? -100 : cls(gen);
        if (bad) labels[static_cast<size_t>(rows / 2)] = cols;  // not a class: the loss is NaN
        cuda::DeviceBuffer dx = cuda::DeviceBuffer::allocate(x.size() * sizeof(float));
        cuda::DeviceBuffer dl = cuda::DeviceBuffer::allocate(labels.size() * sizeof(int64_t));
        cuda::DeviceBuffer loss = cuda::DeviceBuffer::allocate(2 * sizeof(float));
        cuda::DeviceBuffer scratch = cuda::DeviceBuffer::allocate(static_cast<size_t>(rows) * sizeof(double));
        TG_CUDA_CHECK(cudaMemcpy(dx.get(), x.data(), dx.bytes(), cudaMemcpyHostToDevice));
        TG_CUDA_CHECK(cudaMemcpy(dl.get(), labels.data(), dl.bytes(), cudaMemcpyHostToDevice));
        // A pageable cudaMemcpy may return before its DMA lands, and s does not wait for the
        // legacy stream (seen on the H100 with twelve test processes on the GPU).
        TG_CUDA_CHECK(cudaDeviceSynchronize());
        const kernels::TensorView lv{dl.as<float>(), Shape{rows}, DType::I64};
        float* out = loss.as<float>();
        kernels::cuda::cross_entropy(dx.as<float>(), lv, out, rows, cols, cols, -100, scratch.get(), scratch.bytes(), s);
        kernels::cuda::cross_entropy(dx.as<float>(), lv, out + 1, rows, cols, cols, -100, nullptr, 0, s);
        float got[2];
        TG_CUDA_CHECK(cudaStreamSynchronize(s));
        TG_CUDA_CHECK(cudaMemcpy(got, out, sizeof(got), cudaMemcpyDeviceToHost));
        CHECK(std::isnan(got[0]) == (bad == 1));
        CHECK(std::memcmp(&got[0], &got[1], sizeof(float)) == 0);
      }
}

}  // namespace tg::testing
