#pragma once
// Runs one op on the GPU (run_cuda) and on the CPU reference (run_cpu) with the same
// fresh random inputs and compares every output element with atol + rtol*|ref|.
// Both outputs are poisoned with NaN first, and NaN in the reference is a mismatch,
// so an element that either kernel never writes fails. The first 10 mismatches are printed (index, got, want).
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

struct OpCase {
  OpKind op = OpKind::copy;
  Attrs attrs;
  std::vector<Shape> in;  // one per input (a variadic op: any whole number of groups)
  Shape out;              // ignored for update ops (sgd*)
  Tol tol;
  bool unaligned = false;  // every device pointer is offset by one float (hits the scalar paths)
  int labels_input = -1;   // this input gets integer class ids in [0, labels_classes)
  int64_t labels_classes = 0;
  int alias_input = -1;    // the output is this input's buffer (in-place run)
  int count_input = -1;    // this [1] input holds count_value (padded_mse_loss's count)
  float count_value = 0;
  unsigned positive_inputs = 0;  // a mask: these inputs are drawn in [0.25, 1) (log's domain)
  uint64_t seed = 1;
};

// A device copy of a host vector, optionally offset by one element from a 256-byte
// aligned allocation so that the kernels take their unaligned paths. Elements of dtype
// (f32 by default): upload rounds the host floats into it, download widens them back
// (graph/float_formats.h). The copies run on the legacy default stream: call
// cudaDeviceSynchronize() before a kernel on another stream reads them (run_case does).
struct DevTensor {
  cuda::DeviceBuffer buf;
  float* ptr = nullptr;  // as TensorView::data: dtype's elements behind a float pointer
  int64_t n = 0;
  DType dtype = DType::F32;
  DevTensor(int64_t count, bool unaligned, DType dt = DType::F32) : n(count), dtype(dt) {
    buf = cuda::DeviceBuffer::allocate(static_cast<size_t>(count + 1) * elem());
    ptr = reinterpret_cast<float*>(buf.as<char>() + (unaligned ? elem() : 0));
  }
  DevTensor(const std::vector<float>& h, bool unaligned, DType dt = DType::F32)
      : DevTensor(static_cast<int64_t>(h.size()), unaligned, dt) {
    upload(h);
  }
  size_t elem() const { return static_cast<size_t>(dtype_size(dtype)); }
  void upload(const std::vector<float>& h) {
    std::vector<char> bytes(h.size() * elem());
    store_as_dtype(h.data(), h.size(), dtype, bytes.data());
    TG_CUDA_CHECK(cudaMemcpy(ptr, bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
  }
  void poison() { TG_CUDA_CHECK(cudaMemset(ptr, 0xFF, static_cast<size_t>(n) * elem())); }  // NaN in every dtype
  std::vector<float> download() const {
    std::vector<char> bytes(static_cast<size_t>(n) * elem());
    TG_CUDA_CHECK(cudaMemcpy(bytes.data(), ptr, bytes.size(), cudaMemcpyDeviceToHost));
    std::vector<float> h(static_cast<size_t>(n));
    load_from_dtype(bytes.data(), h.size(), dtype, h.data());
    return h;
  }
  kernels::TensorView view(const Shape& s) const { return {ptr, s, dtype}; }
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

// The case of one op sample (tests/common/op_samples.h): its inputs, attributes, inferred
// output shape and CUDA tolerance, with this seed.
OpCase sample_case(OpKind op, const OpSample& s, uint64_t seed);

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
