// matmul_sgd_momentum's CUDA kernels (kernels/cuda/gemm/gemm_update.cu): the tiled kernel at the
// edges of its pipeline (fewer k tiles than stages, one tile, many) and across tiles, the
// plain kernel for other shapes, both against the CPU reference; and the tiled kernel
// against the unfused form on the GPU (the cuBLASLt weight gradient, then sgd_momentum); the
// stream-K form (the default through a backend) against the tiled kernel and the CPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "graph/shape_inference.h"
#include "kernels/cuda/cuda_kernels.h"
#include "tests/kernels/cuda_op_harness.h"
#include "tests/gpu_skip.h"

namespace tg::testing {

namespace {

Attrs rates() {
  Attrs at;
  at.lr = 0.05f;
  at.momentum = 0.9f;
  return at;
}

OpCase gemm_update_case(int64_t rows, int64_t k, int64_t n, bool unaligned, uint64_t seed) {
  OpCase c;
  c.op = OpKind::matmul_sgd_momentum;
  c.attrs = rates();
  c.in = {{k, n}, {rows, k}, {k, n}, {rows, n}};
  // The CPU sums the product in another order; rows products of values in [-1, 1].
  c.tol = Tol{1e-5 * static_cast<double>(std::max<int64_t>(rows / 16, 1)), 1e-4};
  c.unaligned = unaligned;
  c.seed = seed;
  return c;
}

}  // namespace

TEST_CASE("cuda matmul_sgd_momentum: the tiled kernel's pipeline edges and tiles, and the plain kernel, match the CPU") {
  TG_REQUIRE_GPU();
  uint64_t seed = 900;
  // rows 16 (one k tile: the prologue's other copies are empty), 32 and 48 (fewer tiles than
  // the stages), 64, 272 (the stages wrap around several times); 1 x 1, 2 x 3 and 3 x 1 tiles.
  for (int64_t rows : {16, 32, 48, 64, 272})
    for (auto kn : {std::pair<int64_t, int64_t>{128, 128}, {256, 384}, {384, 128}}) {
      CAPTURE(rows);
      CAPTURE(kn.first);
      CAPTURE(kn.second);
      TG_CHECK_CASE(gemm_update_case(rows, kn.first, kn.second, false, seed++));
    }
  // Off the tiles (rows 24, k 100, n 36) or unaligned: the plain kernel.
  TG_CHECK_CASE(gemm_update_case(24, 128, 128, false, seed++));
  TG_CHECK_CASE(gemm_update_case(32, 100, 36, false, seed++));
  TG_CHECK_CASE(gemm_update_case(32, 128, 128, true, seed++));
}

TEST_CASE("cuda matmul_sgd_momentum: the update of the separate cuBLASLt weight gradient and sgd_momentum") {
  TG_REQUIRE_GPU();
  const int64_t rows = 256, k = 512, n = 384;
  const std::vector<float> a = random_vector(rows * k, 31), dz = random_vector(rows * n, 32);
  const std::vector<float> p0 = random_vector(k * n, 33), v0 = random_vector(k * n, 34, -0.1f, 0.1f);
  DevTensor da(a, false), ddz(dz, false), grad(k * n, false);
  DevTensor p_sep(p0, false), v_sep(v0, false), p_fused(p0, false), v_fused(v0, false);
  TG_CUDA_CHECK(cudaDeviceSynchronize());
  Attrs mm;
  mm.trans_a = true;
  run_op(OpKind::matmul, {{da.ptr, {rows, k}}, {ddz.ptr, {rows, n}}}, {grad.ptr, {k, n}}, mm);
  run_op(OpKind::sgd_momentum, {{p_sep.ptr, {k, n}}, {grad.ptr, {k, n}}, {v_sep.ptr, {k, n}}}, {}, rates());
  for (int step = 0; step < 2; ++step)  // a second step from the state the first one reached
    run_op(OpKind::matmul_sgd_momentum,
           {{p_fused.ptr, {k, n}}, {da.ptr, {rows, k}}, {v_fused.ptr, {k, n}}, {ddz.ptr, {rows, n}}}, {}, rates());
  run_op(OpKind::matmul, {{da.ptr, {rows, k}}, {ddz.ptr, {rows, n}}}, {grad.ptr, {k, n}}, mm);
  run_op(OpKind::sgd_momentum, {{p_sep.ptr, {k, n}}, {grad.ptr, {k, n}}, {v_sep.ptr, {k, n}}}, {}, rates());
  // cuBLASLt may sum the product in another order for this shape: a tolerance, and the bits
  // reported.
  const Tol tol{1e-5 * rows / 16, 1e-4};
  const std::vector<float> pf = p_fused.download(), ps = p_sep.download(), vf = v_fused.download(),
                           vs = v_sep.download();
  CHECK(compare("param", pf, ps, tol) == 0);
  CHECK(compare("velocity", vf, vs, tol) == 0);
  const bool same_bits = std::memcmp(pf.data(), ps.data(), pf.size() * sizeof(float)) == 0 &&
                         std::memcmp(vf.data(), vs.data(), vf.size() * sizeof(float)) == 0;
  MESSAGE("matmul_sgd_momentum vs cuBLASLt + sgd_momentum, [", rows, ",", k, "]^T [", rows, ",", n,
          "], two steps: ", std::string(same_bits ? "bitwise equal" : "within the tolerance, not bitwise"));
}

TEST_CASE("cuda matmul_sgd_momentum_streamk: a tile a block gives the tiled kernel's bits, split tiles stay within the tolerance and repeat") {
  TG_REQUIRE_GPU();
  const int64_t rows = 256, m = 512, n = 384;  // 4 x 3 output tiles of 16 k steps each
  const float lr = 0.05f, momentum = 0.9f;
  const std::vector<float> a = random_vector(rows * m, 41), dz = random_vector(rows * n, 42);
  const std::vector<float> p0 = random_vector(m * n, 43), v0 = random_vector(m * n, 44, -0.1f, 0.1f);
  const cudaStream_t s = backend().stream();
  DevTensor da(a, false), ddz(dz, false), p_ref(p0, false), v_ref(v0, false);
  for (int step = 0; step < 2; ++step)
    kernels::cuda::matmul_sgd_momentum(p_ref.ptr, da.ptr, v_ref.ptr, ddz.ptr, rows, m, n, lr, momentum, s);
  TG_CUDA_CHECK(cudaStreamSynchronize(s));
  const std::vector<float> pr = p_ref.download(), vr = v_ref.download();
  // Two steps from (p0, v0) with `blocks` blocks; the flags must be zero again after each call.
  auto two_steps = [&](int blocks) {
    const size_t bytes = kernels::cuda::matmul_sgd_momentum_streamk_workspace(rows, m, n, blocks);
    REQUIRE(bytes > 0);
    cuda::DeviceBuffer ws = cuda::DeviceBuffer::allocate(bytes);
    TG_CUDA_CHECK(cudaMemsetAsync(ws.get(), 0, bytes, s));
    DevTensor p(p0, false), v(v0, false);
    for (int step = 0; step < 2; ++step)
      kernels::cuda::matmul_sgd_momentum_streamk(p.ptr, da.ptr, v.ptr, ddz.ptr, rows, m, n, lr, momentum, ws.get(),
                                                 bytes, blocks, s);
    TG_CUDA_CHECK(cudaStreamSynchronize(s));
    return std::make_pair(p.download(), v.download());
  };
  // 12 blocks (or the device's count, capped at the 12 tiles): a whole tile each, one chain.
  for (int blocks : {12, 0}) {
    CAPTURE(blocks);
    const auto [p, v] = two_steps(blocks);
    CHECK(std::memcmp(p.data(), pr.data(), p.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(v.data(), vr.data(), v.size() * sizeof(float)) == 0);
  }
  // 7 and 5 blocks: ranges of 27.4 and 38.4 k steps, tiles split in two.
  const Tol tol{1e-5 * rows / 16, 1e-4};
  for (int blocks : {7, 5}) {
    CAPTURE(blocks);
    const auto [p, v] = two_steps(blocks);
    CHECK(compare("param", p, pr, tol) == 0);
    CHECK(compare("velocity", v, vr, tol) == 0);
    const auto [p2, v2] = two_steps(blocks);
    CHECK(std::memcmp(p.data(), p2.data(), p.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(v.data(), v2.data(), v.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("cuda matmul_sgd_momentum_streamk: a backend runs it for the op once it prepared one (option on), against the CPU") {
  TG_REQUIRE_GPU();
  kernels::OpCall update;
  update.op = OpKind::matmul_sgd_momentum;
  kernels::OpCall other;
  other.op = OpKind::sgd_momentum;
  // Option off: preparing the op makes no workspace (the tiled kernel runs).
  CudaBackendOptions off;
  off.gemm_update_streamk = false;
  CudaBackend tiled(0, false, off);
  tiled.prepare(update);
  CHECK(tiled.context().update_workspace == nullptr);
  // On (the default): nothing until a GEMM update is prepared, then one workspace a stream, kept.
  REQUIRE(CudaBackendOptions{}.gemm_update_streamk);
  CudaBackend streamk(0, false);
  CHECK(streamk.context().update_workspace == nullptr);
  streamk.prepare(other);
  CHECK(streamk.context().update_workspace == nullptr);
  streamk.prepare(update);
  void* const first = streamk.context().update_workspace;
  REQUIRE(first != nullptr);
  REQUIRE(streamk.side_context().update_workspace != nullptr);
  CHECK(streamk.side_context().update_workspace != first);
  streamk.prepare(update);
  CHECK(streamk.context().update_workspace == first);  // captured graphs keep its address
  // 32 x 16 output tiles of 4 k steps: more tiles than an H200 holds blocks, so the blocks'
  // ranges (2048 k steps over at most 512 blocks) split tiles.
  CHECK(run_case_on(streamk, gemm_update_case(64, 4096, 2048, false, 950)) == 0);
  CHECK(run_case_on(tiled, gemm_update_case(64, 4096, 2048, false, 950)) == 0);
}

}  // namespace tg::testing
