// matmul_sgd_momentum's CUDA kernels (kernels/cuda/gemm_update.cu): the tiled kernel at the
// edges of its pipeline (fewer k tiles than stages, one tile, many) and across tiles, the
// plain kernel for other shapes, both against the CPU reference; and the tiled kernel
// against the unfused form on the GPU (the cuBLASLt weight gradient, then sgd_momentum).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>

#include "graph/shape_inference.h"
#include "tests/cuda/op_harness.h"
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
          "], two steps: ", (same_bits ? "bitwise equal" : "within the tolerance, not bitwise"));
}

}  // namespace tg::testing
