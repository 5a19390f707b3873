// adamw, adamw_multi and global_norm on the GPU (kernels/cuda/adamw.cu, clip.cu) beyond
// what the op samples reach (cuda_all_ops_test.cpp): more groups than one launch holds,
// tensors of several chunks, unaligned ones; against one update per tensor on the GPU
// (bit for bit) and against the CPU reference.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <memory>

#include "graph/float_formats.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cuda/cuda_kernels.h"
#include "tests/gpu_skip.h"
#include "tests/kernels/cuda_op_harness.h"

namespace tg::testing {

TEST_CASE("cuda adamw_multi == one adamw per tensor bitwise, and the CPU reference, over two launches") {
  TG_REQUIRE_GPU();
  const std::vector<int64_t> sizes = {1, 3, 4, 5, 33, 4095, 4096, 4097, 10000, 70001};
  const int count = 60;  // more groups than one launch holds
  Attrs at;
  at.lr = 0.01f;
  at.adam.weight_decay = 0.1f;
  // Three copies of every tensor: [0] updated one by one on the GPU, [1] by adamw_multi,
  // [2] on the host by the CPU reference.
  std::vector<std::unique_ptr<DevTensor>> t[2];
  std::vector<kernels::TensorView> views[2];
  std::vector<std::vector<float>> host;
  std::vector<kernels::TensorView> host_views;
  for (int i = 0; i < count; ++i) {
    const int64_t n = sizes[static_cast<size_t>(i) % sizes.size()];
    const bool unaligned = i % 3 == 2;
    for (int k = 0; k < 5; ++k) {
      const int64_t len = k == 4 ? 1 : n;
      std::vector<float> h = random_vector(len, static_cast<uint64_t>(9000 + i * 5 + k));
      if (k == 3) for (float& x : h) x = x * x;                  // exp_avg_sq >= 0
      if (k == 4) h[0] = static_cast<float>(i % 4);              // steps already made
      host.push_back(h);
      for (int copy = 0; copy < 2; ++copy) {
        t[copy].push_back(std::make_unique<DevTensor>(len, unaligned));
        t[copy].back()->upload(h);
        views[copy].push_back({t[copy].back()->ptr, Shape{len}});
      }
    }
  }
  for (size_t j = 0; j < host.size(); ++j) host_views.push_back({host[j].data(), Shape{static_cast<int64_t>(host[j].size())}});
  TG_CUDA_CHECK(cudaDeviceSynchronize());
  for (int step = 0; step < 2; ++step) {
    for (int i = 0; i < count; ++i) {
      const auto first = views[0].begin() + i * 5;
      run_op(OpKind::adamw, std::vector<kernels::TensorView>(first, first + 5), {}, at);
    }
    run_op(OpKind::adamw_multi, views[1], {}, at);
    kernels::OpCall c;
    c.op = OpKind::adamw_multi;
    c.attrs = &at;
    c.num_inputs = static_cast<int>(host_views.size());
    for (int i = 0; i < kMaxOpInputs; ++i) c.in[static_cast<size_t>(i)] = host_views[static_cast<size_t>(i)];
    c.more = host_views.data() + kMaxOpInputs;
    kernels::run_cpu(c);
  }
  int64_t bad = 0;
  for (size_t j = 0; j < t[0].size(); ++j) {
    if (j % 5 == 1) continue;  // gradients are read only
    const std::vector<float> single = t[0][j]->download();
    bad += compare("adamw_multi vs adamw, input " + std::to_string(j), t[1][j]->download(), single, {});
    bad += compare("adamw vs the CPU, input " + std::to_string(j), single, host[j], {1e-7, 1e-6});
  }
  CHECK(bad == 0);
}

TEST_CASE("cuda sgd_momentum_multi and adamw_multi with bf16 and f16 gradients == the CPU reference") {
  TG_REQUIRE_GPU();
  // Tails of every length past the 4-element vectors, and one element off (the scalar path).
  const std::vector<int64_t> sizes = {1, 5, 4096, 4099, 10001};
  for (DType gdt : {DType::BF16, DType::F16})
    for (OpKind op : {OpKind::sgd_momentum_multi, OpKind::adamw_multi}) {
      CAPTURE(dtype_name(gdt));
      CAPTURE(op_name(op));
      const int group = op_num_inputs(op);
      Attrs at;
      at.lr = 0.01f;
      at.momentum = 0.9f;
      at.adam.weight_decay = 0.1f;
      std::vector<std::unique_ptr<DevTensor>> dev;
      std::vector<kernels::TensorView> views, host_views;
      std::vector<std::vector<float>> host;          // f32 inputs, updated by the CPU
      std::vector<std::vector<char>> host_grads;     // the gradients' 16-bit bits
      host.reserve(sizes.size() * static_cast<size_t>(group) * 2);
      host_grads.reserve(sizes.size() * 2);
      uint64_t seed = 33000;
      for (bool unaligned : {false, true})
        for (int64_t n : sizes)
          for (int k = 0; k < group; ++k) {
            const bool grad = k == 1, steps = op == OpKind::adamw_multi && k == 4;
            const int64_t len = steps ? 1 : n;
            std::vector<float> h = random_vector(len, seed++);
            if (op == OpKind::adamw_multi && k == 3) for (float& x : h) x = x * x;  // exp_avg_sq >= 0
            if (steps) h[0] = 2.0f;
            const DType dt = grad ? gdt : DType::F32;
            for (float& x : h) x = round_to_dtype(x, dt);
            dev.push_back(std::make_unique<DevTensor>(h, unaligned, dt));
            views.push_back(dev.back()->view(Shape{len}));
            host.push_back(h);
            if (grad) {
              host_grads.emplace_back(static_cast<size_t>(len) * 2);
              store_as_dtype(h.data(), h.size(), dt, host_grads.back().data());
              host_views.push_back({reinterpret_cast<float*>(host_grads.back().data()), Shape{len}, dt});
            } else {
              host_views.push_back({host.back().data(), Shape{len}});
            }
          }
      TG_CUDA_CHECK(cudaDeviceSynchronize());
      run_op(op, views, {}, at);
      kernels::OpCall c;
      c.op = op;
      c.attrs = &at;
      c.num_inputs = static_cast<int>(host_views.size());
      for (int i = 0; i < kMaxOpInputs && i < c.num_inputs; ++i) c.in[static_cast<size_t>(i)] = host_views[static_cast<size_t>(i)];
      if (c.num_inputs > kMaxOpInputs) c.more = host_views.data() + kMaxOpInputs;
      kernels::run_cpu(c);
      int64_t bad = 0;
      for (size_t j = 0; j < dev.size(); ++j) {
        if (j % static_cast<size_t>(group) == 1) continue;  // gradients are read only
        bad += compare(fmt::format("{} input {}", op_name(op), j), dev[j]->download(), host[j],
                       op == OpKind::adamw_multi ? Tol{1e-7, 1e-6} : Tol{});
      }
      CHECK(bad == 0);
    }
}

TEST_CASE("cuda global_norm: the CPU's norm over many tensors of several chunks, the same bits every run") {
  TG_REQUIRE_GPU();
  const std::vector<int64_t> sizes = {1, 7, 16384, 16385, 100000, 3};
  const int count = 140;  // more tensors than one launch holds
  std::vector<std::unique_ptr<DevTensor>> dev;
  std::vector<kernels::TensorView> views;
  std::vector<std::vector<float>> host;
  std::vector<kernels::TensorView> host_views;
  for (int i = 0; i < count; ++i) {
    const int64_t n = sizes[static_cast<size_t>(i) % sizes.size()];
    host.push_back(random_vector(n, static_cast<uint64_t>(500 + i)));
    dev.push_back(std::make_unique<DevTensor>(n, i % 2 == 1));
    dev.back()->upload(host.back());
    views.push_back({dev.back()->ptr, Shape{n}});
  }
  for (auto& h : host) host_views.push_back({h.data(), Shape{static_cast<int64_t>(h.size())}});
  TG_CUDA_CHECK(cudaDeviceSynchronize());
  DevTensor out(1, false);
  std::vector<float> first;
  for (int run = 0; run < 3; ++run) {
    out.poison();
    TG_CUDA_CHECK(cudaDeviceSynchronize());
    run_op(OpKind::global_norm, views, {out.ptr, Shape{1}}, Attrs{});
    const std::vector<float> got = out.download();
    if (run == 0) first = got;
    CHECK(got == first);
  }
  std::vector<float> want(1, NAN);
  kernels::OpCall c;
  c.op = OpKind::global_norm;
  c.num_inputs = count;
  for (int i = 0; i < kMaxOpInputs; ++i) c.in[static_cast<size_t>(i)] = host_views[static_cast<size_t>(i)];
  c.more = host_views.data() + kMaxOpInputs;
  c.out = {want.data(), Shape{1}};
  kernels::run_cpu(c);
  CHECK(compare("global_norm vs the CPU", first, want, {0.0, 1e-6}) == 0);
}

}  // namespace tg::testing
