// bf16 and f16 on the CPU: the reference of "compute in f32, store in the low type".
// Every input is widened (exactly) into f32 scratch, the f32 kernel runs on the scratch,
// and each output is rounded once, to nearest even, into its own dtype. A GPU kernel that
// loads 16-bit values, computes in f32 registers and rounds on store does the same, up to
// the order of its sums.
#include <vector>

#include "graph/attention.h"
#include "graph/float_formats.h"
#include "kernels/cpu/cpu_kernels.h"

namespace tg::kernels {

namespace {

void widen(const TensorView& t, std::vector<float>& out) {
  out.resize(static_cast<size_t>(t.shape.numel()));
  load_from_dtype(t.data, out.size(), t.dtype, out.data());
}

}  // namespace

void run_cpu_widened(const OpCall& c) {
  std::vector<std::vector<float>> inputs(static_cast<size_t>(c.num_inputs));
  std::vector<TensorView> more;
  OpCall w = c;
  // The widened call of a cast (or of a fused op that ends in one, layernorm_cast) computes
  // in f32; the rounding is the store below.
  Attrs f32_cast;
  if (op_traits(c.op).dtype_rule == op_table::kTypeCast) {
    f32_cast = *c.attrs;
    f32_cast.to = DType::F32;
    w.attrs = &f32_cast;
  }
  for (int i = 0; i < c.num_inputs; ++i) {
    const TensorView& t = c.input(i);
    // Ids and labels are read in their own dtype by the kernels that take them; f32 inputs as
    // they are, so that an update writes them in place (batch_norm_stats_update's running
    // statistics beside 16-bit activations).
    const bool keep = dtype_is_int(t.dtype) || t.dtype == DType::F32;
    if (!keep) widen(t, inputs[static_cast<size_t>(i)]);
    const TensorView wide = keep ? t : TensorView{inputs[static_cast<size_t>(i)].data(), t.shape, DType::F32};
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
  const int lse = attention_lse_output(c.op);
  if (lse == 0) cpu_attention_split_lse(out.data(), c.out.shape.numel() / 2, c.out.dtype);
  if (lse == 1) cpu_attention_split_lse(out2.data(), c.out2.shape.numel() / 2, c.out2.dtype);
  if (c.out.data) store_as_dtype(out.data(), out.size(), c.out.dtype, c.out.data);
  if (c.out2.data) store_as_dtype(out2.data(), out2.size(), c.out2.dtype, c.out2.data);
}

}  // namespace tg::kernels
