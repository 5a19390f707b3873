#pragma once
// One op of the row, reduction, convolution and batchnorm families in bf16 or f16 on the
// GPU, checked two ways on the same inputs (random values rounded to the dtype):
//  - bitwise against its f32 kernel run on the widened inputs, each output rounded once:
//    the 16-bit kernels load, compute in f32 exactly as the f32 kernel does (same frame,
//    same order) and round on store, so nothing else is allowed;
//  - against the CPU reference in the same dtype (kernels/cpu/widen.cpp) with the op's f32
//    tolerance plus one ulp of the dtype (low_precision_tol: 2^-7 relative for bf16, 2^-10
//    for f16, and f16's smallest subnormal absolute): the two sides round f32 values that
//    differ within the f32 tolerance, and such values can straddle a rounding boundary of
//    the dtype, a whole ulp apart; bitwise where the f32 kernels agree bitwise.
// Outputs are poisoned with NaN first, so an element never written fails.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "graph/dtype_rules.h"
#include "graph/float_formats.h"
#include "graph/shape_inference.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cuda/raii.h"
#include "tests/kernels/cuda_op_harness.h"

namespace tg::testing {

struct LowCase {
  std::string what;
  OpKind op = OpKind::copy;
  Attrs attrs;
  std::vector<Shape> in;
  Tol f32_tol;                   // the op's f32 CUDA-vs-CPU tolerance; 0, 0: bitwise
  unsigned positive_inputs = 0;  // a mask: these inputs are drawn in [0.25, 1)
  bool unaligned = false;        // every device pointer one element past an aligned one
  uint64_t seed = 1;
  CudaBackendOptions options;    // of the backend the GPU runs on (backend(options))
};

// Widened outputs of one run (out2: layernorm_grad_params' dbeta), and the output's dtype (dt,
// or f32 where the op's dtype rule keeps it: a batch norm's channel sums).
struct LowOutputs {
  std::vector<float> out, out2;
  DType out_dtype = DType::F32;
};

// The case's inputs: random values in [-1, 1) (or [0.25, 1)), rounded to dt.
inline std::vector<std::vector<float>> low_inputs(const LowCase& c, DType dt) {
  std::vector<std::vector<float>> v;
  for (size_t i = 0; i < c.in.size(); ++i) {
    const bool pos = (c.positive_inputs >> i) & 1u;
    std::vector<float> x = random_vector(c.in[i].numel(), c.seed * 31 + i, pos ? 0.25f : -1.0f, 1.0f);
    for (float& e : x) e = round_to_dtype(e, dt);
    v.push_back(std::move(x));
  }
  return v;
}

inline bool low_has_out2(OpKind op) { return op == OpKind::layernorm_grad_params; }

// Runs the case in dtype dt on the CPU reference (gpu false) or the shared CUDA backend of
// the case's options.
inline LowOutputs run_low(const LowCase& c, const std::vector<std::vector<float>>& values, DType dt, bool gpu) {
  const Shape out_shape = infer_shape(c.op, c.in, c.attrs, c.what);
  const size_t es = static_cast<size_t>(dtype_size(dt));
  // Unaligned: one element of the view's own dtype past an aligned allocation.
  auto offset = [&](DType view) { return c.unaligned && gpu ? static_cast<size_t>(dtype_size(view)) : 0; };
  std::vector<std::vector<char>> host;
  std::vector<cuda::DeviceBuffer> dev;
  auto place = [&](const std::vector<char>& bytes, DType view) -> float* {
    host.push_back(bytes);
    if (!gpu) return reinterpret_cast<float*>(host.back().data());
    dev.push_back(cuda::DeviceBuffer::allocate(bytes.size() + 16));
    char* p = dev.back().as<char>() + offset(view);
    TG_CUDA_CHECK(cudaMemcpy(p, bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
    return reinterpret_cast<float*>(p);
  };
  kernels::OpCall call;
  call.op = c.op;
  call.attrs = &c.attrs;
  call.num_inputs = static_cast<int>(c.in.size());
  for (size_t i = 0; i < c.in.size(); ++i) {
    std::vector<char> bytes(values[i].size() * es);
    store_as_dtype(values[i].data(), values[i].size(), dt, bytes.data());
    call.in[i] = {place(bytes, dt), c.in[i], dt};
  }
  const DType out_dt = infer_dtypes(c.op, std::vector<DType>(c.in.size(), dt), c.attrs, c.what).at(0);
  const size_t out_bytes = static_cast<size_t>(out_shape.numel() * dtype_size(out_dt));
  const std::vector<char> poison(out_bytes, static_cast<char>(0xFF));  // NaN
  call.out = {place(poison, out_dt), out_shape, out_dt};
  if (low_has_out2(c.op)) call.out2 = {place(poison, out_dt), out_shape, out_dt};
  auto read = [&](const kernels::TensorView& t) {
    std::vector<char> bytes(static_cast<size_t>(t.shape.numel() * dtype_size(t.dtype)));
    if (gpu) TG_CUDA_CHECK(cudaMemcpy(bytes.data(), t.data, bytes.size(), cudaMemcpyDeviceToHost));
    else std::memcpy(bytes.data(), t.data, bytes.size());
    std::vector<float> v(static_cast<size_t>(t.shape.numel()));
    load_from_dtype(bytes.data(), v.size(), t.dtype, v.data());
    return v;
  };
  if (gpu) {
    // A cudaMemcpy from pageable memory may return before its DMA lands, and the backend's
    // stream does not wait for the legacy stream: without this the kernel can read what the
    // allocation held before (a poisoned buffer's NaN).
    TG_CUDA_CHECK(cudaDeviceSynchronize());
    backend(c.options).run(call);
    backend(c.options).synchronize();
  } else {
    kernels::run_cpu(call);
  }
  LowOutputs o{read(call.out), {}, out_dt};
  if (low_has_out2(c.op)) o.out2 = read(call.out2);
  return o;
}

// The two checks above in dtype dt; the number of mismatches.
inline int64_t check_low(const LowCase& c, DType dt) {
  const std::string what = c.what + " " + op_name(c.op) + " " + dtype_name(dt) + (c.unaligned ? " unaligned" : "");
  const auto values = low_inputs(c, dt);
  const LowOutputs got = run_low(c, values, dt, true);
  LowOutputs f32 = run_low(c, values, DType::F32, true);
  for (auto* v : {&f32.out, &f32.out2})
    for (float& e : *v) e = round_to_dtype(e, got.out_dtype);
  const LowOutputs want = run_low(c, values, dt, false);
  const Tol tol = low_precision_tol(c.f32_tol, dt);
  int64_t bad = compare(what + ": vs its f32 kernel rounded", got.out, f32.out, Tol{}) +
                compare(what + ": vs the CPU", got.out, want.out, tol);
  if (low_has_out2(c.op))
    bad += compare(what + ": out2 vs its f32 kernel rounded", got.out2, f32.out2, Tol{}) +
           compare(what + ": out2 vs the CPU", got.out2, want.out2, tol);
  return bad;
}

// check_low in bf16 and f16.
inline int64_t check_low_both(const LowCase& c) { return check_low(c, DType::BF16) + check_low(c, DType::F16); }

}  // namespace tg::testing
