// bf16 and f16 on the CPU: the reference of "compute in f32, store in the low type".
// Every input is widened (exactly) into f32 scratch, the f32 kernel runs on the scratch,
// and each output is rounded once, to nearest even, into its own dtype. A GPU kernel that
// loads 16-bit values, computes in f32 registers and rounds on store does the same, up to
// the order of its sums.
#include <cstring>
#include <vector>

#include "graph/float_formats.h"
#include "kernels/cpu/cpu_kernels.h"

namespace tg::kernels {

namespace {

void widen(const TensorView& t, std::vector<float>& out) {
  const size_t n = static_cast<size_t>(t.shape.numel());
  out.resize(n);
  const auto* bits = reinterpret_cast<const uint16_t*>(t.data);
  switch (t.dtype) {
    case DType::F32: std::memcpy(out.data(), t.data, n * sizeof(float)); return;
    case DType::BF16:
      for (size_t i = 0; i < n; ++i) out[i] = f32_from_bf16(bits[i]);
      return;
    case DType::F16:
      for (size_t i = 0; i < n; ++i) out[i] = f32_from_f16(bits[i]);
      return;
  }
}

void narrow(const std::vector<float>& in, const TensorView& t) {
  const size_t n = in.size();
  auto* bits = reinterpret_cast<uint16_t*>(t.data);
  switch (t.dtype) {
    case DType::F32: std::memcpy(t.data, in.data(), n * sizeof(float)); return;
    case DType::BF16:
      for (size_t i = 0; i < n; ++i) bits[i] = bf16_from_f32(in[i]);
      return;
    case DType::F16:
      for (size_t i = 0; i < n; ++i) bits[i] = f16_from_f32(in[i]);
      return;
  }
}

}  // namespace

void run_cpu_widened(const OpCall& c) {
  std::vector<std::vector<float>> inputs(static_cast<size_t>(c.num_inputs));
  std::vector<TensorView> more;
  OpCall w = c;
  for (int i = 0; i < c.num_inputs; ++i) {
    const TensorView& t = c.input(i);
    widen(t, inputs[static_cast<size_t>(i)]);
    const TensorView wide{inputs[static_cast<size_t>(i)].data(), t.shape, DType::F32};
    if (i < kMaxOpInputs) w.in[static_cast<size_t>(i)] = wide;
    else more.push_back(wide);
  }
  w.more = more.empty() ? nullptr : more.data();
  std::vector<float> out, out2;
  if (c.out.data) {
    out.resize(static_cast<size_t>(c.out.shape.numel()));
    w.out = {out.data(), c.out.shape, DType::F32};
  }
  if (c.out2.data) {
    out2.resize(static_cast<size_t>(c.out2.shape.numel()));
    w.out2 = {out2.data(), c.out2.shape, DType::F32};
  }
  run_cpu(w);
  if (c.out.data) narrow(out, c.out);
  if (c.out2.data) narrow(out2, c.out2);
}

}  // namespace tg::kernels
