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

#include "graph/dtype_rules.h"
#include "graph/float_formats.h"
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
  if (c.dtype != DType::F32) s += std::string(" in ") + dtype_name(c.dtype);
  if (c.dy_dtype != DType::F32) s += std::string(", dy in ") + dtype_name(c.dy_dtype);
  if (c.channels_f32) s += ", per-channel inputs in f32";
  if (c.stats_f32) s += ", running statistics in f32";
  if (c.unaligned) s += " unaligned";
  if (c.alias_input >= 0) s += fmt::format(" in place (out = input {})", c.alias_input);
  return s;
}

}  // namespace

int64_t run_case(const OpCase& c) { return run_case_on(backend(), c); }

Tol low_precision_tol(Tol f32, DType dt) {
  if (dt == DType::F32 || (f32.atol == 0 && f32.rtol == 0)) return f32;
  const bool f16 = dt == DType::F16;
  return {f32.atol + (f16 ? std::ldexp(1.0, -24) : 0.0), f32.rtol + std::ldexp(1.0, f16 ? -10 : -7)};
}

OpCase sample_case(OpKind op, const OpSample& s, uint64_t seed, DType dt) {
  OpCase c;
  c.op = op;
  c.attrs = s.attrs;
  c.in = s.in;
  if (!op_is_update(op)) c.out = infer_shape(op, s.in, s.attrs, "sample");
  c.tol = Tol{s.cuda_atol, s.cuda_rtol};
  if (dt != DType::F32)
    c.tol = s.cuda_atol16 >= 0 ? Tol{s.cuda_atol16, s.cuda_rtol16} : low_precision_tol(c.tol, dt);
  c.dtype = dt;
  c.labels_input = s.labels_input;
  c.labels_classes = s.classes;
  c.labels_dtype = s.labels_dtype;
  c.count_input = s.count_input;
  c.count_value = s.count;
  c.positive_inputs = s.positive_inputs;
  c.copy_group = s.copy_group;
  c.copy_dtype = s.copy_dtype;
  c.channels_f32 = s.channels_f32;
  c.stats_f32 = s.stats_f32;
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

namespace {

// The host side's tensor, with DevTensor's interface: the CPU reference's buffers.
struct HostTensor {
  std::vector<char> bytes;
  float* ptr = nullptr;
  int64_t n = 0;
  DType dt = DType::F32;
  HostTensor(int64_t count, bool, DType dtype) : n(count), dt(dtype) {
    bytes.resize(static_cast<size_t>(count) * static_cast<size_t>(dtype_size(dt)));
    ptr = reinterpret_cast<float*>(bytes.data());
  }
  void upload(const std::vector<float>& h) { store_as_dtype(h.data(), h.size(), dt, bytes.data()); }
  void poison() { std::memset(bytes.data(), 0xFF, bytes.size()); }
  std::vector<float> download() const {
    std::vector<float> h(static_cast<size_t>(n));
    load_from_dtype(bytes.data(), h.size(), dt, h.data());
    return h;
  }
};

// The case's input values: random (but the labels, the count and the positive inputs),
// rounded to the case's dtype, so that an f32 run on them sees what a 16-bit run loads.
std::vector<std::vector<float>> case_inputs(const OpCase& c) {
  std::vector<std::vector<float>> host;
  for (size_t k = 0; k < c.in.size(); ++k) {
    const int i = static_cast<int>(k);
    const int64_t n = c.in[k].numel();
    std::vector<float> h;
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
    // Labels and ids keep their dtype (labels_dtype): rounding 1023 to bf16 would make it 1024.
    if (i != c.labels_input)
      for (float& x : h)
        x = round_to_dtype(x, i == 0 && c.dy_dtype != DType::F32                          ? c.dy_dtype
                              : channel_input_f32(c.op, i, c.channels_f32, c.stats_f32) ? DType::F32
                                                                                        : c.dtype);
    host.push_back(std::move(h));
  }
  return host;
}

// The outputs a case compares, in order: every updated parameter (and velocity) of an
// update op, or the output (input alias_input's buffer when in place), then the second
// output; with their names.
struct Outputs {
  std::vector<std::string> names;
  std::vector<std::vector<float>> values;
  std::vector<bool> copy;  // per output: a *_multi_cast update's low-precision copy
  std::vector<DType> dtypes;  // per output: its dtype
};

// Runs case c in dtype dt on one side: T is DevTensor (run: the GPU backend) or HostTensor
// (run: run_cpu), holding `inputs` rounded to dt.
template <typename T, typename Run>
Outputs run_side(const OpCase& c, DType dt, const std::vector<std::vector<float>>& inputs, Run run) {
  const int nin = static_cast<int>(c.in.size());
  std::vector<DType> in_dt;
  for (int i = 0; i < nin; ++i) in_dt.push_back(op_float_input_dtype(c.op, i, dt));  // a gradient's dloss: f32
  // Ids and labels keep their dtype in every case: an integer, or whole numbers in f32 (where's
  // f32 condition next to 16-bit values).
  if (c.labels_input >= 0) in_dt[static_cast<size_t>(c.labels_input)] = c.labels_dtype;
  if (c.dy_dtype != DType::F32) in_dt[0] = c.dy_dtype;
  for (int i = 0; i < nin; ++i)
    if (channel_input_f32(c.op, i, c.channels_f32, c.stats_f32)) in_dt[static_cast<size_t>(i)] = DType::F32;
  for (int i = 0; i < nin; ++i)
    if (c.copy_group > 0 && i != c.count_input && (i + 1) % c.copy_group == 0) in_dt[static_cast<size_t>(i)] = c.copy_dtype;
  std::vector<std::unique_ptr<T>> ins;
  kernels::OpCall call;
  call.op = c.op;
  call.attrs = &c.attrs;
  call.num_inputs = nin;
  std::vector<kernels::TensorView> more;  // a variadic op's inputs past kMaxOpInputs
  for (int i = 0; i < nin; ++i) {
    const auto k = static_cast<size_t>(i);
    ins.push_back(std::make_unique<T>(c.in[k].numel(), c.unaligned, in_dt[k]));
    ins.back()->upload(inputs[k]);
    const kernels::TensorView v{ins.back()->ptr, c.in[k], in_dt[k]};
    if (i < kMaxOpInputs) call.in[k] = v;
    else more.push_back(v);
  }
  call.more = more.empty() ? nullptr : more.data();
  const bool update = op_is_update(c.op);
  std::unique_ptr<T> out, out2;
  if (!update) {
    const std::vector<DType> out_dt = infer_dtypes(c.op, in_dt, c.attrs, "case");
    if (c.alias_input >= 0) {
      call.out = {ins[static_cast<size_t>(c.alias_input)]->ptr, c.out, out_dt.at(0)};
    } else {
      out = std::make_unique<T>(c.out.numel(), c.unaligned, out_dt.at(0));
      out->poison();
      call.out = {out->ptr, c.out, out_dt.at(0)};
    }
    // The second output of the fused ops that have one: its shape from the shape rule.
    if (op_num_outputs(c.op) == 2) {
      const Shape s2 = infer_shapes(c.op, c.in, c.attrs, "case").at(1);
      out2 = std::make_unique<T>(s2.numel(), c.unaligned, out_dt.at(1));
      out2->poison();
      call.out2 = {out2->ptr, s2, out_dt.at(1)};
    }
  }
  run(call);
  Outputs r;
  if (update) {
    // Every input the update writes: each group's parameter, and its velocity or AdamW state.
    for (int i = 0; i < nin; ++i) {
      if (!op_update_writes(c.op, i, nin)) continue;
      const bool copy = op_input_is_copy(c.op, i, nin);
      r.names.push_back(
          fmt::format("{} (input {})", i % op_num_inputs(c.op) == 0 ? "param" : copy ? "low copy" : "state", i));
      r.values.push_back(ins[static_cast<size_t>(i)]->download());
      r.copy.push_back(copy);
      r.dtypes.push_back(in_dt[static_cast<size_t>(i)]);
    }
  } else {
    r.names.push_back("");
    r.values.push_back(out ? out->download() : ins[static_cast<size_t>(c.alias_input)]->download());
    r.copy.push_back(false);
    r.dtypes.push_back(call.out.dtype);
    if (out2) {
      r.names.push_back("second output");
      r.values.push_back(out2->download());
      r.copy.push_back(false);
      r.dtypes.push_back(call.out2.dtype);
    }
  }
  return r;
}

Outputs gpu_side(CudaBackend& b, const OpCase& c, DType dt, const std::vector<std::vector<float>>& inputs) {
  return run_side<DevTensor>(c, dt, inputs, [&](const kernels::OpCall& call) {
    // The uploads and the poisoning ran on the legacy default stream (cudaMemset is
    // asynchronous) while the backend's stream is non-blocking: without this wait the
    // kernel can run before the poison lands and the NaN overwrites its output. Seen on
    // the H200 with several test processes sharing the GPU.
    TG_CUDA_CHECK(cudaDeviceSynchronize());
    b.run(call);
    b.synchronize();
  });
}

int64_t compare_outputs(const OpCase& c, const Outputs& got, const Outputs& want, Tol tol) {
  const std::string name = describe(c);
  int64_t bad = 0;
  for (size_t k = 0; k < got.values.size(); ++k) {
    const std::string what = got.names[k].empty() ? name : name + " " + got.names[k];
    // A copy is the parameter rounded to 16 bits: parameters a few f32 ulp apart may round
    // to neighbouring 16-bit values.
    bad += compare(what, got.values[k], want.values[k], got.copy[k] ? low_precision_tol(tol, c.copy_dtype) : tol);
  }
  if (bad) std::printf("FAILED case: %s\n", name.c_str());
  return bad;
}

}  // namespace

int64_t run_case_on(CudaBackend& b, const OpCase& c) {
  REQUIRE(op_arity_ok(c.op, static_cast<int>(c.in.size())));
  const std::vector<std::vector<float>> inputs = case_inputs(c);
  const Outputs want =
      run_side<HostTensor>(c, c.dtype, inputs, [](const kernels::OpCall& call) { kernels::run_cpu(call); });
  return compare_outputs(c, gpu_side(b, c, c.dtype, inputs), want, c.tol);
}

int64_t run_case_vs_f32(const OpCase& c) { return run_case_vs_f32_on(backend(), c); }

int64_t run_case_vs_f32_on(CudaBackend& b, const OpCase& c) {
  REQUIRE(op_arity_ok(c.op, static_cast<int>(c.in.size())));
  REQUIRE(c.dtype != DType::F32);
  const std::vector<std::vector<float>> inputs = case_inputs(c);
  Outputs want = gpu_side(b, c, DType::F32, inputs);
  // Each output rounded to the dtype the 16-bit run gives it (a kTypeLogits op's loss and a
  // batch norm's channel sums stay f32, graph/dtype_rules.h; a fused op that ends in a cast
  // has attrs.to's).
  const Outputs got = gpu_side(b, c, c.dtype, inputs);
  for (size_t k = 0; k < want.values.size(); ++k)
    for (float& x : want.values[k]) x = round_to_dtype(x, got.dtypes.at(k));
  return compare_outputs(c, got, want, Tol{});
}

int64_t run_case_vs_widened_dy(const OpCase& c) {
  REQUIRE(op_arity_ok(c.op, static_cast<int>(c.in.size())));
  REQUIRE(c.dy_dtype != DType::F32);
  const std::vector<std::vector<float>> inputs = case_inputs(c);  // dy rounded to dy_dtype: exact in f32
  OpCase wide = c;
  wide.dy_dtype = DType::F32;
  const Outputs want = gpu_side(backend(), wide, c.dtype, inputs);
  return compare_outputs(c, gpu_side(backend(), c, c.dtype, inputs), want, Tol{});
}

}  // namespace tg::testing
