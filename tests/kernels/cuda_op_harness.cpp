#include "tests/kernels/cuda_op_harness.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>

#include "graph/shape_inference.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/raii.h"

namespace tg::testing {

const std::vector<int64_t> kSizes = {1, 2, 3, 4, 7, 8, 33, 1023, 1024, 4099, 65537, (1 << 20) + 3};

CudaBackend& backend() { return backend(CudaBackendOptions{}); }

CudaBackend& backend(const CudaBackendOptions& options) {
  static std::map<std::string, std::unique_ptr<CudaBackend>> made;
  std::unique_ptr<CudaBackend>& b = made[options.str()];
  if (!b) b = std::make_unique<CudaBackend>(0, false, options);
  return *b;
}

std::vector<float> gpu_reduce(const std::vector<float>& x, ReduceGeometry g, bool unaligned, size_t scratch_bytes,
                              bool mean) {
  DevTensor dx(x, unaligned);
  DevTensor dy(g.outer * g.inner, unaligned);
  dy.poison();
  cuda::DeviceBuffer scratch;
  if (scratch_bytes) scratch = cuda::DeviceBuffer::allocate(scratch_bytes);
  TG_CUDA_CHECK(cudaDeviceSynchronize());  // uploads and poison ran on the legacy stream
  const cudaStream_t s = backend().stream();
  void* sp = scratch_bytes ? scratch.get() : nullptr;
  if (mean)
    kernels::cuda::reduce_mean(dx.ptr, dy.ptr, g.outer, g.len, g.inner, sp, scratch_bytes, s);
  else
    kernels::cuda::reduce_sum(dx.ptr, dy.ptr, g.outer, g.len, g.inner, sp, scratch_bytes, s);
  TG_CUDA_CHECK(cudaStreamSynchronize(s));
  return dy.download();
}

std::vector<float> pad_rows(const std::vector<float>& x, ReduceGeometry g, int64_t k) {
  std::vector<float> xp(static_cast<size_t>(g.outer * (g.len + k) * g.inner), 0.0f);
  for (int64_t o = 0; o < g.outer; ++o)
    std::copy(x.begin() + o * g.len * g.inner, x.begin() + (o + 1) * g.len * g.inner,
              xp.begin() + o * (g.len + k) * g.inner);
  return xp;
}

std::vector<float> random_vector(int64_t n, uint64_t seed, float lo, float hi) {
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + 12345);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = u(rng);
  return v;
}

int64_t compare(const std::string& what, const std::vector<float>& got, const std::vector<float>& want, Tol tol) {
  if (got.size() != want.size()) {
    std::printf("%s: size mismatch: got %zu elements, want %zu\n", what.c_str(), got.size(), want.size());
    return static_cast<int64_t>(got.size() > want.size() ? got.size() : want.size());
  }
  int64_t bad = 0;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i];
    const bool exact = tol.atol == 0 && tol.rtol == 0;
    // Both sides' outputs start as NaN, so NaN against NaN is an element that neither
    // kernel wrote (or inputs outside the op's domain): a mismatch, never a match.
    // Tests that expect a NaN check for it themselves.
    bool ok;
    if (std::isnan(w)) {
      ok = false;
    } else if (exact) {
      ok = std::memcmp(&got[i], &want[i], sizeof(float)) == 0;
    } else {
      ok = std::fabs(g - w) <= tol.atol + tol.rtol * std::fabs(w);
    }
    if (!ok) {
      if (bad < 10)
        std::printf("  %s: mismatch at [%zu]: got %.9g, want %.9g%s\n", what.c_str(), i, g, w,
                    std::isnan(w) ? " (the CPU reference is NaN)" : "");
      const double err = std::isnan(g) || std::isnan(w) ? INFINITY : std::fabs(g - w);
      worst = err > worst ? err : worst;
      ++bad;
    }
  }
  if (bad)
    std::printf("  %s: %lld of %zu elements differ (tolerance %g + %g*|want|, largest error %g)\n", what.c_str(),
                static_cast<long long>(bad), got.size(), tol.atol, tol.rtol, worst);
  return bad;
}

namespace {

std::string describe(const OpCase& c) {
  std::string s = fmt::format("{}(", op_name(c.op));
  for (size_t i = 0; i < c.in.size(); ++i) s += (i ? ", " : "") + c.in[i].str();
  s += ")";
  if (!op_is_update(c.op)) s += " -> " + c.out.str();
  if (c.unaligned) s += " unaligned";
  if (c.alias_input >= 0) s += fmt::format(" in place (out = input {})", c.alias_input);
  return s;
}

}  // namespace

int64_t run_case(const OpCase& c) { return run_case_on(backend(), c); }

OpCase sample_case(OpKind op, const OpSample& s, uint64_t seed) {
  OpCase c;
  c.op = op;
  c.attrs = s.attrs;
  c.in = s.in;
  if (!op_is_update(op)) c.out = infer_shape(op, s.in, s.attrs, "sample");
  c.tol = Tol{s.cuda_atol, s.cuda_rtol};
  c.labels_input = s.labels_input;
  c.labels_classes = s.classes;
  c.count_input = s.count_input;
  c.count_value = s.count;
  c.positive_inputs = s.positive_inputs;
  c.seed = seed;
  return c;
}

void run_op(OpKind op, const std::vector<kernels::TensorView>& ins, kernels::TensorView out, const Attrs& at,
            kernels::TensorView out2) {
  run_op_on(backend(), op, ins, out, at, out2);
}

void run_op_on(CudaBackend& b, OpKind op, const std::vector<kernels::TensorView>& ins, kernels::TensorView out,
               const Attrs& at, kernels::TensorView out2) {
  kernels::OpCall c;
  c.op = op;
  c.attrs = &at;
  c.num_inputs = static_cast<int>(ins.size());
  std::vector<kernels::TensorView> more;
  for (size_t i = 0; i < ins.size(); ++i) {
    if (i < c.in.size()) c.in[i] = ins[i];
    else more.push_back(ins[i]);
  }
  c.more = more.empty() ? nullptr : more.data();
  c.out = out;
  c.out2 = out2;
  b.run(c);
  b.synchronize();
}

int64_t run_case_on(CudaBackend& b, const OpCase& c) {
  const int nin = static_cast<int>(c.in.size());
  REQUIRE(op_arity_ok(c.op, nin));
  std::vector<std::vector<float>> host(static_cast<size_t>(nin));
  std::vector<std::unique_ptr<DevTensor>> dev;
  for (int i = 0; i < nin; ++i) {
    const int64_t n = c.in[static_cast<size_t>(i)].numel();
    auto& h = host[static_cast<size_t>(i)];
    if (i == c.count_input) {
      h.assign(static_cast<size_t>(n), c.count_value);
    } else if (i == c.labels_input) {
      std::mt19937_64 rng(c.seed + 77);
      std::uniform_int_distribution<int64_t> d(0, c.labels_classes - 1);
      h.resize(static_cast<size_t>(n));
      for (auto& x : h) x = static_cast<float>(d(rng));
    } else {
      h = random_vector(n, c.seed * 31 + static_cast<uint64_t>(i));
      if ((c.positive_inputs >> i) & 1u) make_positive(h);
    }
    dev.push_back(std::make_unique<DevTensor>(n, c.unaligned));
    dev.back()->upload(h);
  }
  const bool update = op_is_update(c.op);
  std::vector<float> cpu_out, cpu_out2;
  std::unique_ptr<DevTensor> dev_out, dev_out2;
  kernels::OpCall cc, gc;
  cc.op = gc.op = c.op;
  cc.attrs = gc.attrs = &c.attrs;
  cc.num_inputs = gc.num_inputs = nin;
  std::vector<kernels::TensorView> cmore, gmore;  // a variadic op's inputs past kMaxOpInputs
  for (int i = 0; i < nin; ++i) {
    const auto k = static_cast<size_t>(i);
    const kernels::TensorView hv{host[k].data(), c.in[k]}, dv{dev[k]->ptr, c.in[k]};
    if (i < kMaxOpInputs) {
      cc.in[k] = hv;
      gc.in[k] = dv;
    } else {
      cmore.push_back(hv);
      gmore.push_back(dv);
    }
  }
  cc.more = cmore.empty() ? nullptr : cmore.data();
  gc.more = gmore.empty() ? nullptr : gmore.data();
  // The second output of the fused ops that have one: its shape from the shape rule.
  if (op_num_outputs(c.op) == 2) {
    const Shape s2 = infer_shapes(c.op, c.in, c.attrs, "case").at(1);
    cpu_out2.assign(static_cast<size_t>(s2.numel()), NAN);
    dev_out2 = std::make_unique<DevTensor>(s2.numel(), c.unaligned);
    dev_out2->poison();
    cc.out2 = {cpu_out2.data(), s2};
    gc.out2 = {dev_out2->ptr, s2};
  }
  if (!update) {
    if (c.alias_input >= 0) {
      const auto k = static_cast<size_t>(c.alias_input);
      cc.out = {host[k].data(), c.out};
      gc.out = {dev[k]->ptr, c.out};
    } else {
      cpu_out.assign(static_cast<size_t>(c.out.numel()), NAN);
      dev_out = std::make_unique<DevTensor>(c.out.numel(), c.unaligned);
      dev_out->poison();
      cc.out = {cpu_out.data(), c.out};
      gc.out = {dev_out->ptr, c.out};
    }
  }
  kernels::run_cpu(cc);
  // The uploads and the poisoning ran on the legacy default stream (cudaMemset is
  // asynchronous) while the backend's stream is non-blocking: without this wait the
  // kernel can run before the poison lands and the NaN overwrites its output. Seen on
  // the H200 with several test processes sharing the GPU.
  TG_CUDA_CHECK(cudaDeviceSynchronize());
  b.run(gc);
  b.synchronize();

  const std::string name = describe(c);
  int64_t bad = 0;
  if (update) {
    // Every input the update writes: each group's parameter, and its velocity or AdamW state.
    for (int i = 0; i < nin; ++i) {
      if (!op_update_writes(c.op, i)) continue;
      const auto k = static_cast<size_t>(i);
      bad += compare(fmt::format("{} {} (input {})", name, i % op_num_inputs(c.op) == 0 ? "param" : "state", i),
                     dev[k]->download(), host[k], c.tol);
    }
  } else if (c.alias_input >= 0) {
    const auto k = static_cast<size_t>(c.alias_input);
    bad += compare(name, dev[k]->download(), host[k], c.tol);
  } else {
    bad += compare(name, dev_out->download(), cpu_out, c.tol);
  }
  if (dev_out2) bad += compare(name + " second output", dev_out2->download(), cpu_out2, c.tol);
  if (bad) std::printf("FAILED case: %s\n", name.c_str());
  return bad;
}

}  // namespace tg::testing
