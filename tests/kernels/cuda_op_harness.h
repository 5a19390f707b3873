#pragma once
// Runs one op on the GPU (run_cuda) and on the CPU reference (run_cpu) with the same
// fresh random inputs and compares every output element with atol + rtol*|ref|.
// Both outputs are poisoned with NaN first, and NaN in the reference is a mismatch,
// so an element that either kernel never writes fails. The first 10 mismatches are printed (index, got, want).
// A case may run in bf16 or f16 (OpCase::dtype): the inputs are drawn, rounded to the dtype,
// and both sides run on 16-bit tensors (the CPU reference: the f32 kernel on the widened
// inputs, each output rounded once, kernels/cpu/widen.cpp); outputs compare widened to f32.
#include <cstdint>
#include <string>
#include <vector>

#include "graph/attrs.h"
#include "graph/float_formats.h"
#include "graph/op.h"
#include "graph/shape.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/raii.h"
#include "kernels/op_call.h"
#include "tests/common/op_samples.h"

namespace tg::testing {

struct Tol {
  double atol = 0, rtol = 0;  // 0, 0: bitwise equal
};

// The tolerance of a 16-bit run of an op whose f32 run has tolerance `f32`. Bitwise stays
// bitwise: a kernel that computes in f32 as the f32 kernel does and rounds once gives the
// reference's bits wherever the f32 kernel does. Otherwise the two f32 results, a few f32
// ulp apart, may round to neighbouring 16-bit values: one 16-bit ulp, at most 2^-7 |ref|
// in bf16 and 2^-10 |ref| in f16 (2^-24 absolute among f16's subnormals), on top of the
// f32 tolerance.
Tol low_precision_tol(Tol f32, DType dt);

struct OpCase {
  OpKind op = OpKind::copy;
  Attrs attrs;
  std::vector<Shape> in;  // one per input (a variadic op: any whole number of groups)
  Shape out;              // ignored for update ops (sgd*)
  Tol tol;
  DType dtype = DType::F32;  // of every input (kTypeSame ops; a cast's output is attrs.to's; a kTypeLogits
                             // op's dloss and loss stay f32)
  bool unaligned = false;  // every device pointer is offset by one element (hits the scalar paths)
  int labels_input = -1;   // this input gets integer class ids in [0, labels_classes)
  int64_t labels_classes = 0;
  DType labels_dtype = DType::F32;  // ids and labels keep their dtype (i32, i64 or f32) in every case
  int alias_input = -1;    // the output is this input's buffer (in-place run)
  int count_input = -1;    // this [1] input holds count_value (padded_mse_loss's count)
  float count_value = 0;
  unsigned positive_inputs = 0;  // a mask: these inputs are drawn in [0.25, 1) (log's domain)
  int copy_group = 0;            // the *_multi_cast updates: the group size; each group's last input
  DType copy_dtype = DType::BF16;  // is a low-precision copy of this dtype (OpSample::copy_group)
  DType dy_dtype = DType::F32;     // a kTypeLowGrad op's dy (input 0) when bf16 or f16 beside f32 inputs
  bool channels_f32 = false;       // a kTypeChannels op's per-channel inputs (gamma, beta, running statistics)
                                   // in f32 beside per-element inputs in `dtype` (graph/dtype_rules.h)
  bool stats_f32 = false;          // the running statistics alone in f32
  uint64_t seed = 1;
};

// A device tensor of `count` elements of dtype dt, optionally offset by one element from a
// 256-byte aligned allocation so that the kernels take their unaligned paths. Host values
// go up rounded to dt (graph/float_formats.h) and come back widened to f32. The copies run
// on the legacy default stream: call cudaDeviceSynchronize() before a kernel on another
// stream reads them (run_case does).
struct DevTensor {
  cuda::DeviceBuffer buf;
  float* ptr = nullptr;  // the first element, behind a float* as kernels::TensorView holds it
  int64_t n = 0;
  DType dt = DType::F32;
  DevTensor(int64_t count, bool unaligned, DType dtype = DType::F32) : n(count), dt(dtype) {
    const size_t size = static_cast<size_t>(dtype_size(dt));
    buf = cuda::DeviceBuffer::allocate(static_cast<size_t>(count + 1) * size);
    ptr = reinterpret_cast<float*>(buf.as<char>() + (unaligned ? size : 0));
  }
  DevTensor(const std::vector<float>& h, bool unaligned, DType dtype = DType::F32)
      : DevTensor(static_cast<int64_t>(h.size()), unaligned, dtype) {
    upload(h);
  }
  size_t bytes() const { return static_cast<size_t>(n) * static_cast<size_t>(dtype_size(dt)); }
  kernels::TensorView view(const Shape& s) const { return {ptr, s, dt}; }
  void upload(const std::vector<float>& h) {
    std::vector<char> b(bytes());
    store_as_dtype(h.data(), h.size(), dt, b.data());
    TG_CUDA_CHECK(cudaMemcpy(ptr, b.data(), b.size(), cudaMemcpyHostToDevice));
  }
  void poison() { TG_CUDA_CHECK(cudaMemset(ptr, 0xFF, bytes())); }  // NaN in every dtype
  std::vector<float> download() const {
    std::vector<char> b(bytes());
    TG_CUDA_CHECK(cudaMemcpy(b.data(), ptr, b.size(), cudaMemcpyDeviceToHost));
    std::vector<float> h(static_cast<size_t>(n));
    load_from_dtype(b.data(), h.size(), dt, h.data());
    return h;
  }
};

// The shared CUDA backend of the test binary (device 0, the default options), made on
// first use.
CudaBackend& backend();
// A shared backend on device 0 with these kernel choices (kernels/cuda_options.h), one per
// distinct options, made on first use: how a test picks the kernels it tests.
CudaBackend& backend(const CudaBackendOptions& options);

// A tensor seen as [outer, len, inner] for a sum over len (the reduction frame's view).
struct ReduceGeometry {
  int64_t outer, len, inner;
};
// reduce_sum (reduce_mean with `mean`) of x in that view, on the shared backend's stream in
// the current column-reduction variant; scratch_bytes 0 passes no scratch.
std::vector<float> gpu_reduce(const std::vector<float>& x, ReduceGeometry g, bool unaligned, size_t scratch_bytes,
                              bool mean = false);
// x with k zero rows appended to the reduced axis of every outer index.
std::vector<float> pad_rows(const std::vector<float>& x, ReduceGeometry g, int64_t k);

// Returns the number of mismatching elements over all outputs (0 = pass) and
// prints a description of the case plus the first mismatches.
int64_t run_case(const OpCase& c);
int64_t run_case_on(CudaBackend& b, const OpCase& c);
// A 16-bit case on the GPU against the same op's f32 kernel, also on the GPU, on the same
// (widened) inputs, its outputs rounded once to c.dtype: bitwise (c.tol is not used). What
// a kernel that loads, computes in f32 registers with the f32 kernel's arithmetic and
// rounds on store gives, the transcendentals included.
int64_t run_case_vs_f32(const OpCase& c);
// A case with a 16-bit dy (c.dy_dtype) on the GPU against the same op on the GPU with dy
// widened to f32 first (the cast it replaces): bitwise (c.tol is not used).
int64_t run_case_vs_widened_dy(const OpCase& c);
int64_t run_case_vs_f32_on(CudaBackend& b, const OpCase& c);

// The case of one op sample (tests/common/op_samples.h): its inputs, attributes, inferred
// output shape and CUDA tolerance (in dtype dt: the sample's 16-bit tolerance, or
// low_precision_tol of its f32 one), with this seed.
OpCase sample_case(OpKind op, const OpSample& s, uint64_t seed, DType dt = DType::F32);

// One op on device tensors through the shared backend's entry (ins past kMaxOpInputs go
// in OpCall::more), then a synchronize. out2: the second output of a two-output op.
void run_op(OpKind op, const std::vector<kernels::TensorView>& ins, kernels::TensorView out, const Attrs& at,
            kernels::TensorView out2 = {});
// The same through backend b.
void run_op_on(CudaBackend& b, OpKind op, const std::vector<kernels::TensorView>& ins, kernels::TensorView out,
               const Attrs& at, kernels::TensorView out2 = {});

// Compares got with want; prints the first 10 mismatches under `what`.
int64_t compare(const std::string& what, const std::vector<float>& got, const std::vector<float>& want, Tol tol);

std::vector<float> random_vector(int64_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f);

// The sizes every elementwise test covers: 1, 7, 1023, and others not a multiple of 4.
extern const std::vector<int64_t> kSizes;

}  // namespace tg::testing

// CHECKs that the case has no mismatches; the case's description is in the output.
#define TG_CHECK_CASE(c) CHECK(::tg::testing::run_case(c) == 0)
