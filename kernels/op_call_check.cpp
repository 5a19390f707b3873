#include "kernels/op_call_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "graph/attention.h"
#include "graph/broadcast.h"
#include "graph/conv.h"
#include "graph/dtype_rules.h"
#include "graph/heads.h"
#include "graph/shape_inference.h"
#include "kernels/philox.h"

namespace tg::kernels {

namespace {

class Checker {
 public:
  Checker(const OpCall& c, const char* backend) : c_(c), backend_(backend) {}

  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) const {
    throw std::invalid_argument(fmt::format("{} {}: ", backend_, op_name(c_.op)) +
                                fmt::format(f, std::forward<Args>(args)...));
  }
  const Attrs& attrs() const {
    if (!c_.attrs) fail("attrs is null; point OpCall::attrs at the node's Attrs");
    return *c_.attrs;
  }
  void numel(const char* what, const Shape& s, int64_t expect) const {
    if (s.numel() != expect)
      fail("{} has shape {} ({} elements) but the op needs {} elements", what, s.str(), s.numel(), expect);
  }
  // The op table's alias column: the inputs a kernel reads after writing the output
  // (a matmul's operands, a reduction's input, a loss gradient's dloss) must not share it.
  void alias() const {
    for (int i = 0; i < c_.num_inputs; ++i) {
      const float* p = c_.input(i).data;
      if (p == c_.out.data && !op_output_may_alias(c_.op, i))
        fail("output aliases input {}; this op cannot run in place over it, give the output its own buffer", i);
      if (c_.out2.data && p == c_.out2.data)
        fail("the second output aliases input {}; give it its own buffer", i);
    }
    if (c_.out2.data && c_.out2.data == c_.out.data) fail("both outputs share one buffer; give each its own");
  }
  int axis(int axis, int rank) const {
    const int a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank) fail("axis {} is out of range for rank {}", axis, rank);
    return a;
  }

 private:
  const OpCall& c_;
  const char* backend_;
};

int64_t prod(const Shape& s, int from, int to) {
  int64_t p = 1;
  for (int d = from; d < to; ++d) p *= s[d];
  return p;
}

void check_matmul(const Checker& k, const OpCall& c) {
  const Attrs& at = k.attrs();
  const Shape& a = c.in[0].shape;
  const Shape& b = c.in[1].shape;
  if (a.rank < 2 || (b.rank != 2 && b.rank != 3) || (b.rank == 3 && (a.rank != 3 || a[0] != b[0])))
    k.fail("cannot multiply {} by {}; A must be rank >= 2 and B [k,n], or both [batch,.,.]", a.str(), b.str());
  const int64_t ka = at.trans_a ? a[a.rank - 2] : a[a.rank - 1];
  const int64_t kb = at.trans_b ? b[b.rank - 1] : b[b.rank - 2];
  if (ka != kb) k.fail("inner dims of {} and {} differ: {} != {}", a.str(), b.str(), ka, kb);
  const int64_t m = at.trans_a ? a[a.rank - 1] : a[a.rank - 2];
  const int64_t n = at.trans_b ? b[b.rank - 2] : b[b.rank - 1];
  k.numel("output", c.out.shape, prod(a, 0, a.rank - 2) * m * n);
}

void check_transpose(const Checker& k, const OpCall& c) {
  const Attrs& at = k.attrs();
  const Shape& x = c.in[0].shape;
  bool seen[kMaxRank] = {};
  for (int d = 0; d < x.rank; ++d) {
    const int p = at.perm[static_cast<size_t>(d)];
    if (p < 0 || p >= x.rank || seen[p]) k.fail("perm is not a permutation of 0..{}", x.rank - 1);
    seen[p] = true;
  }
  k.numel("output", c.out.shape, x.numel());
}

// The output's size in n and cols; each input has n elements, or cols (a row read at
// every row, which the output must not overwrite).
void check_fused_elementwise(const Checker& k, const OpCall& c, CallGeometry& g) {
  const std::string err = ew_program_error(k.attrs().program, c.num_inputs);
  if (!err.empty()) k.fail("{}", err);
  g.n = c.out.shape.numel();
  g.rows = c.out.shape.rows();
  g.cols = c.out.shape.last();
  for (int i = 0; i < c.num_inputs; ++i) {
    const TensorView& t = c.input(i);
    const int64_t n = t.shape.numel();
    if (t.data == c.out.data && t.dtype != c.out.dtype)
      k.fail("output ({}) aliases input {} ({}); in place, the output has the input's dtype: give it its own buffer",
             dtype_name(c.out.dtype), i, dtype_name(t.dtype));
    if (n == g.n) continue;
    if (n != g.cols)
      k.fail("input {} has shape {} ({} elements); the output {} needs {} or a row of {}", i, t.shape.str(), n,
             c.out.shape.str(), g.n, g.cols);
    if (t.data == c.out.data) k.fail("output aliases input {}, a row read at every row; give the output its own buffer", i);
  }
}

// An update's written inputs (op_update_writes) share no buffer with any other input.
void check_written_apart(const Checker& k, const OpCall& c) {
  for (int i = 0; i < c.num_inputs; ++i) {
    if (!op_update_writes(c.op, i, c.num_inputs)) continue;
    for (int j = 0; j < c.num_inputs; ++j)
      if (j != i && c.input(j).data == c.input(i).data)
        k.fail("inputs {} and {} share a buffer, and input {} is written; give every parameter and velocity its own",
               std::min(i, j), std::max(i, j), i);
  }
}

// A guarded update's found-inf flag (its last input) is one element.
void check_guard(const Checker& k, const OpCall& c) {
  if (op_update_guarded(c.op, c.num_inputs)) k.numel("found-inf flag", c.input(c.num_inputs - 1).shape, 1);
}

// Every group has the parameter's element count (a weight copy at least that: the update
// writes its first n); nothing written appears twice and no gradient is written (the groups
// run in parallel).
void check_multi_update(const Checker& k, const OpCall& c) {
  const int group = op_num_inputs(c.op);
  check_guard(k, c);
  for (int i = 0; i < op_group_inputs(c.op, c.num_inputs); i += group) {
    const int64_t n = c.input(i).shape.numel();
    for (int j = 1; j < group; ++j)
      if (op_input_is_copy(c.op, i + j, c.num_inputs) ? c.input(i + j).shape.numel() < n
                                                      : c.input(i + j).shape.numel() != n)
        k.fail("group {}: input {} has shape {} but the parameter (input {}) has {} elements", i / group, i + j,
               c.input(i + j).shape.str(), i, n);
  }
  check_written_apart(k, c);
}

// The attention ops (graph/attention.h): the geometry from q, every head view of q's element
// count, the lse pair per query row. g.rows: B * heads, g.cols: dh, g.len: seq, g.inner: heads.
void check_attention(const Checker& k, const OpCall& c, CallGeometry& g) {
  const bool grad = c.op == OpKind::attention_grad;
  const Shape& q = c.in[grad ? 1 : 0].shape;
  AttentionGeometry ag;
  std::string why;
  if (!attention_geometry(q, k.attrs(), ag, &why)) k.fail("{}", why);
  const int views = c.op == OpKind::attention_lse ? 2 : grad ? 5 : 3;
  for (int i = 0; i < views; ++i)
    if (c.in[static_cast<size_t>(i)].shape != q)
      k.fail("input {} is {} but q is {}; every head view has q's shape", i, c.in[static_cast<size_t>(i)].shape.str(),
             q.str());
  if (grad) k.numel("lse", c.in[5].shape, ag.lse_shape().numel());
  if (op_has_key_lengths(c.op, c.num_inputs)) k.numel("key lengths", c.input(c.num_inputs - 1).shape, ag.batch);
  const Shape out = c.op == OpKind::attention_lse ? ag.lse_shape() : grad ? ag.grad_shape() : ag.view_shape();
  k.numel("output", c.out.shape, out.numel());
  if (c.op == OpKind::attention_fwd_lse) k.numel("second output (lse)", c.out2.shape, ag.lse_shape().numel());
  g.rows = ag.rows();
  g.cols = ag.dh;
  g.len = ag.seq;
  g.inner = ag.heads;
}

// adamw's groups: the gradient and moments of the parameter's element count, a step count
// of one element; nothing written appears twice; a guarded update's flag of one element.
void check_adamw(const Checker& k, const OpCall& c) {
  check_guard(k, c);
  const int group = op_num_inputs(c.op);  // 5, or 6 with the low-precision copy last
  for (int i = 0; i < op_group_inputs(c.op, c.num_inputs); i += group) {
    const int64_t n = c.input(i).shape.numel();
    for (int j = 1; j < group; ++j)
      if (j != 4 && (op_input_is_copy(c.op, i + j, c.num_inputs) ? c.input(i + j).shape.numel() < n
                                                                 : c.input(i + j).shape.numel() != n))
        k.fail("group {}: input {} has shape {} but the parameter (input {}) has {} elements", i / group, i + j,
               c.input(i + j).shape.str(), i, n);
    if (c.input(i + 4).shape.numel() != 1)
      k.fail("group {}: the step count (input {}) has shape {}; it must be one element", i / group, i + 4,
             c.input(i + 4).shape.str());
  }
  check_written_apart(k, c);
}

// A program's views: the inputs as the program types them, the output of its last result's
// dtype (graph/ew_program.h).
void check_program_dtypes(const Checker& k, const OpCall& c) {
  std::vector<DType> in(static_cast<size_t>(c.num_inputs)), results;
  for (int i = 0; i < c.num_inputs; ++i) in[static_cast<size_t>(i)] = c.input(i).dtype;
  const std::string err = ew_program_dtypes(k.attrs().program, in, &results);
  if (!err.empty()) k.fail("{}", err);
  if (c.out.dtype != results.back())
    k.fail("the output is {} but the program's last instruction gives {}", dtype_name(c.out.dtype),
           dtype_name(results.back()));
}

// kTypeChannels (the batchnorm family): graph/dtype_rules.h's channel_dtypes over the inputs,
// and each output in channel_output_dtype's dtype.
void check_channel_dtypes(const Checker& k, const OpCall& c) {
  DType in[kMaxOpInputs];  // the batchnorm family's ops take at most 4 inputs (op_arity_ok checked it)
  for (int i = 0; i < c.num_inputs; ++i) {
    const DType dt = c.input(i).dtype;
    if (!dtype_is_known(dt)) k.fail("input {} has dtype #{}, which is not a dtype", i, static_cast<int>(dt));
    if (dtype_is_int(dt)) k.fail("input {} is {}, an integer; the op takes float values only", i, dtype_name(dt));
    in[i] = dt;
  }
  DType d = DType::F32, p = DType::F32;
  const std::string err = channel_dtypes(c.op, in, c.num_inputs, &d, &p);
  if (!err.empty()) k.fail("{}", err);
  for (int out = 0; out < op_num_outputs(c.op); ++out) {
    const TensorView& t = out == 0 ? c.out : c.out2;
    const DType need = channel_output_dtype(c.op, out, d);
    if (t.dtype != need)
      k.fail("the {} is {} but the op needs {} there (the activations' dtype, f32 for a channel's sums)",
             out == 0 ? "output" : "second output", dtype_name(t.dtype), dtype_name(need));
  }
}

// The op table's dtype column over the views: f32 everywhere for a kTypeF32 op, input
// 0's dtype on every view of a kTypeSame op, the logits' dtype on input 0 of a kTypeLogits
// op and on its gradient output, f32 on its other views; a kTypeLowGrad op's dy may be
// 16-bit beside f32 views (low_grad_input); the ids and labels (graph/dtype_rules.h) are
// integers, or whole numbers in f32 (the form the reference interpreter holds them in).
void check_dtypes(const Checker& k, const OpCall& c) {
  if (op_traits(c.op).dtype_rule == op_table::kTypeProgram) return check_program_dtypes(k, c);
  if (op_traits(c.op).dtype_rule == op_table::kTypeChannels) return check_channel_dtypes(k, c);
  // cast takes any dtype to any; a fused op that ends in a cast (layernorm_cast) checks its
  // inputs as a kTypeSame op does and its output against attrs.to.
  const bool cast = c.op == OpKind::cast;
  const bool ends_in_cast = op_traits(c.op).dtype_rule == op_table::kTypeCast;
  const int first = c.op == OpKind::where ? 1 : 0;  // where's input 0 is its condition
  const bool logits = op_traits(c.op).dtype_rule == op_table::kTypeLogits;
  const bool low_dy = c.num_inputs > 1 && low_grad_input(c.op, c.input(0).dtype, c.input(1).dtype);
  const DType want = op_is_f32_only(c.op) || c.num_inputs == 0 ? DType::F32 : c.input(low_dy ? 1 : first).dtype;
  if (dtype_is_int(want) && !op_moves_ints(c.op) && !cast)
    k.fail("input {} is {}, an integer; the op takes float values only", first, dtype_name(want));
  auto check_as = [&](const TensorView& t, const std::string& what, DType need) {
    if (!dtype_is_known(t.dtype)) k.fail("{} has dtype #{}, which is not a dtype", what, static_cast<int>(t.dtype));
    if (t.dtype != need)
      k.fail("{} is {} but the op needs {} there{}", what, dtype_name(t.dtype), dtype_name(need),
             op_is_f32_only(c.op) ? " (it runs in f32 only)"
             : logits             ? " (the logits, input 0, may be 16-bit; the other inputs and the loss are f32)"
                                  : fmt::format(" (every input and output share input {}'s dtype)", first));
  };
  for (int i = 0; i < c.num_inputs; ++i) {
    const TensorView& t = c.input(i);
    if (op_input_is_index(c.op, i)) {
      if (!dtype_is_int(t.dtype) && t.dtype != DType::F32)
        k.fail("input {} (ids or labels) is {}; it needs i32, i64 or f32 whole numbers", i, dtype_name(t.dtype));
      continue;
    }
    if (cast && !dtype_is_known(t.dtype)) k.fail("input {} has dtype #{}, which is not a dtype", i, static_cast<int>(t.dtype));
    if (op_input_is_copy(c.op, i, c.num_inputs)) {
      const DType low = c.input(op_num_inputs(c.op) - 1).dtype;  // the first group's copy
      if (t.dtype != DType::BF16 && t.dtype != DType::F16)
        k.fail("input {} (a low-precision copy) is {}; it needs bf16 or f16", i, dtype_name(t.dtype));
      if (t.dtype != low)
        k.fail("input {} (a low-precision copy) is {} but the first group's is {}; one dtype for every copy", i,
               dtype_name(t.dtype), dtype_name(low));
      continue;
    }
    if (op_input_is_low_multi_grad(c.op, i, c.num_inputs, t.dtype)) continue;  // widened by the update itself
    if (low_dy && i == 0) continue;  // a 16-bit dy, widened on load
    if (!cast) check_as(t, fmt::format("input {}", i), logits && i > 0 ? DType::F32 : want);
  }
  if (ends_in_cast) {
    if (c.out.dtype != k.attrs().to)
      k.fail("the output is {} but attrs.to is {}", dtype_name(c.out.dtype), dtype_name(k.attrs().to));
    return;
  }
  if (logits) return check_as(c.out, "the output", logits_output_dtype(c.op, want));
  if (!op_is_update(c.op)) check_as(c.out, "the output", want);
  if (op_num_outputs(c.op) == 2) check_as(c.out2, "the second output", want);
}

}  // namespace

bool call_is_f32(const OpCall& c) {
  // A low-precision weight copy is only stored, rounded, by the f32 update that writes it; a
  // multi-tensor update's 16-bit gradient is widened, exactly, by the update itself.
  for (int i = 0; i < c.num_inputs; ++i)
    if (c.input(i).dtype != DType::F32 && !op_input_is_index(c.op, i) && !op_input_is_copy(c.op, i, c.num_inputs) &&
        !op_input_is_low_multi_grad(c.op, i, c.num_inputs, c.input(i).dtype))
      return false;
  return c.out.dtype == DType::F32 && c.out2.dtype == DType::F32;
}

bool call_has_ints(const OpCall& c) {
  if (dtype_is_int(c.out.dtype)) return true;
  for (int i = 0; i < c.num_inputs; ++i)
    if (dtype_is_int(c.input(i).dtype) && !op_input_is_index(c.op, i)) return true;
  return false;
}

DType call_dtype(const OpCall& c) {
  if (c.op == OpKind::where) return c.out.dtype;  // input 0 is the condition
  return c.num_inputs > 0 ? c.input(0).dtype : c.out.dtype;
}

CallGeometry check_op_call(const OpCall& c, const char* backend) {
  const Checker k(c, backend);
  if (!op_arity_ok(c.op, c.num_inputs)) k.fail("takes {}, the call has {}", op_arity_text(c.op), c.num_inputs);
  if (c.num_inputs > kMaxOpInputs && !c.more)
    k.fail("has {} inputs but OpCall::more is null; point it at inputs {}..", c.num_inputs, kMaxOpInputs);
  for (int i = 0; i < c.num_inputs; ++i)
    if (!c.input(i).data) k.fail("input {} has no data (null pointer)", i);
  if (!op_is_update(c.op) && !c.out.data) k.fail("output has no data (null pointer)");
  if (op_num_outputs(c.op) == 2 && !c.out2.data) k.fail("second output has no data (null pointer)");
  k.alias();
  check_dtypes(k, c);

  const Shape& x = c.in[0].shape;
  const Shape& y = c.in[1].shape;
  CallGeometry g;
  g.n = x.numel();
  g.rows = x.rows();
  g.cols = x.last();
  // Every op that reads an attribute other than in_place needs the node's Attrs.
  if (op_traits(c.op).attrs & static_cast<AttrMask>(~attr_bit(AttrId::in_place))) k.attrs();
  if (op_keeps_shape(c.op)) {
    for (int i = 1; i < c.num_inputs; ++i) k.numel(fmt::format("input {}", i).c_str(), c.input(i).shape, g.n);
    k.numel("output", c.out.shape, g.n);
    return g;
  }
  if (op_in_family(c.op, "batchnorm")) {
    Shape out;
    std::string why;
    const Shape in[4] = {x, y, c.num_inputs > 2 ? c.in[2].shape : Shape{}, c.num_inputs > 3 ? c.in[3].shape : Shape{}};
    if (!batch_norm_geometry(c.op, in, k.attrs().eps, k.attrs().channels_last, g.bn, out, &why)) k.fail("{}", why);
    if (op_is_update(c.op)) check_written_apart(k, c);
    else k.numel("output", c.out.shape, out.numel());
    if (c.op == OpKind::batch_norm_fold) k.numel("second output (the folded bias)", c.out2.shape, g.bn.c);
    if (c.op == OpKind::batch_norm_grad) k.numel("second output (dgamma, then dbeta)", c.out2.shape, 2 * g.bn.c);
    if (c.op == OpKind::batch_norm_moments) k.numel("second output (mean, then variance)", c.out2.shape, 2 * g.bn.c);
    if (const std::string bad_act = act_refusal(c.op, k.attrs().act); !bad_act.empty()) k.fail("{}", bad_act);
    return g;
  }
  if (op_in_family(c.op, "conv")) {
    Shape out;
    std::string why;
    const Shape in[4] = {x, y, c.num_inputs > 2 ? c.in[2].shape : Shape{}, c.num_inputs > 3 ? c.in[3].shape : Shape{}};
    if (!conv_op_geometry(c.op, in, k.attrs().conv, g.conv, out, &why)) k.fail("{}", why);
    if (const std::string bad_act = act_refusal(c.op, k.attrs().act); !bad_act.empty()) k.fail("{}", bad_act);
    k.numel("output", c.out.shape, out.numel());
    g.n = out.numel();
    return g;
  }
  // The ops of the table's kSameShape flag and the conv and batchnorm families were checked above; every
  // other op has a case.
  switch (c.op) {
    case OpKind::matmul: check_matmul(k, c); break;
    case OpKind::softmax:
    case OpKind::reshape: k.numel("output", c.out.shape, g.n); break;
    case OpKind::bias_add:
      k.numel("bias", y, x.last());
      k.numel("output", c.out.shape, g.n);
      break;
    case OpKind::layernorm:
    case OpKind::layernorm_cast:
      k.numel("gamma", y, x.last());
      k.numel("beta", c.in[2].shape, x.last());
      k.numel("output", c.out.shape, g.n);
      break;
    case OpKind::layernorm_grad_x:
    case OpKind::layernorm_grad_x_acc:
    case OpKind::layernorm_grad_gamma:
      k.numel("x", y, g.n);
      g.rows = y.rows();
      g.cols = y.last();
      if (c.op == OpKind::layernorm_grad_x_acc) k.numel("acc", c.in[3].shape, g.n);
      if (c.op != OpKind::layernorm_grad_gamma) {
        k.numel("gamma", c.in[2].shape, y.last());
        k.numel("output", c.out.shape, g.n);
      } else {
        k.numel("output", c.out.shape, y.last());
      }
      break;
    case OpKind::reduce_sum:
    case OpKind::reduce_mean: {
      const int a = k.axis(k.attrs().axis, x.rank);
      g.outer = prod(x, 0, a);
      g.len = x[a];
      g.inner = prod(x, a + 1, x.rank);
      k.numel("output", c.out.shape, g.outer * g.inner);
      break;
    }
    case OpKind::broadcast: {
      const Attrs& at = k.attrs();
      const int a = k.axis(at.axis, x.rank + 1);
      if (at.size < 1) k.fail("size = {} must be >= 1", at.size);
      g.outer = prod(x, 0, a);
      g.len = at.size;
      g.inner = prod(x, a, x.rank);
      k.numel("output", c.out.shape, g.n * at.size);
      break;
    }
    case OpKind::transpose: check_transpose(k, c); break;
    case OpKind::concat: {
      const int a = g.axis = k.axis(k.attrs().axis, x.rank);
      g.outer = prod(x, 0, a);
      g.inner = prod(x, a + 1, x.rank);
      g.len = 0;
      for (int i = 0; i < c.num_inputs; ++i) {
        const Shape& s = c.input(i).shape;
        bool fits = s.rank == x.rank;
        for (int d = 0; fits && d < x.rank; ++d) fits = d == a || s[d] == x[d];
        if (!fits) k.fail("input {} is {} but input 0 is {}; they may differ along axis {} only", i, s.str(), x.str(), a);
        g.len += s[a];
      }
      k.numel("output", c.out.shape, g.outer * g.len * g.inner);
      break;
    }
    case OpKind::slice: {
      const Attrs& at = k.attrs();
      const int a = g.axis = k.axis(at.axis, x.rank);
      if (at.start < 0 || at.size < 1 || at.size > x[a] || at.start > x[a] - at.size)
        k.fail("start {} and size {} do not fit axis {} of {}", at.start, at.size, a, x.str());
      g.outer = prod(x, 0, a);
      g.len = at.size;
      g.inner = prod(x, a + 1, x.rank);
      k.numel("output", c.out.shape, g.outer * g.len * g.inner);
      break;
    }
    case OpKind::mse_loss:
      k.numel("target", y, g.n);
      k.numel("output", c.out.shape, 1);
      break;
    case OpKind::mse_loss_grad:
      k.numel("target", y, g.n);
      k.numel("dloss", c.in[2].shape, 1);
      k.numel("output", c.out.shape, g.n);
      break;
    case OpKind::padded_mse_loss:
      k.numel("target", y, g.n);
      k.numel("count", c.in[2].shape, 1);
      k.numel("output", c.out.shape, 1);
      break;
    case OpKind::padded_mse_loss_grad:
      k.numel("target", y, g.n);
      k.numel("count", c.in[2].shape, 1);
      k.numel("dloss", c.in[3].shape, 1);
      k.numel("output", c.out.shape, g.n);
      break;
    case OpKind::cross_entropy:
    case OpKind::cross_entropy_grad:
      if (x.rank != 2) k.fail("logits {} must be [n, classes]", x.str());
      g.rows = x[0];
      g.cols = x[1];
      if (k.attrs().size < 0 || k.attrs().size > x[1])
        k.fail("size {} is not a class count of logits {} (0: every column; else at most {})", k.attrs().size, x.str(),
               x[1]);
      g.len = cross_entropy_classes(k.attrs(), x[1]);
      k.numel("labels", y, x[0]);
      if (c.op == OpKind::cross_entropy) {
        k.numel("output", c.out.shape, 1);
      } else {
        k.numel("dloss", c.in[2].shape, 1);
        k.numel("output", c.out.shape, x.numel());
      }
      break;
    case OpKind::fill:
      g.n = c.out.shape.numel();
      break;
    case OpKind::embedding:
      if (x.rank != 2) k.fail("the table {} must be [vocabulary, dim]", x.str());
      g.rows = y.numel();
      g.cols = x[1];
      g.len = x[0];
      k.numel("output", c.out.shape, g.rows * g.cols);
      break;
    case OpKind::embedding_grad:
      g.rows = y.numel();
      g.cols = x.last();
      g.len = k.attrs().size;
      if (g.len < 1) k.fail("attrs.size = {} must be the vocabulary, >= 1", g.len);
      k.numel("dy", x, g.rows * g.cols);
      k.numel("output", c.out.shape, g.len * g.cols);
      break;
    case OpKind::dropout:
      k.numel("rng state", y, 2);
      k.numel("output", c.out.shape, g.n);
      if (!(k.attrs().p >= 0.0f && k.attrs().p < 1.0f)) k.fail("attrs.p = {} must be in [0, 1)", k.attrs().p);
      if (g.n > kDropoutMaxElements) k.fail("x has {} elements; one dropout draws for at most 2^34", g.n);
      break;
    case OpKind::rng_advance:
      k.numel("rng state", x, 2);
      break;
    case OpKind::sgd:
      k.numel("grad", y, g.n);
      check_guard(k, c);
      break;
    case OpKind::sgd_momentum:
      k.numel("grad", y, g.n);
      k.numel("velocity", c.in[2].shape, g.n);
      check_guard(k, c);
      break;
    case OpKind::unscale:
      k.numel("scale", y, 1);
      k.numel("output", c.out.shape, g.n);
      break;
    case OpKind::found_inf:
      k.numel("found", y, 1);
      k.numel("output", c.out.shape, 1);
      break;
    case OpKind::update_scale:
      k.numel("scaler", x, 3);
      k.numel("found", y, 1);
      check_written_apart(k, c);
      break;
    case OpKind::linear:
    case OpKind::linear_add: {
      const Attrs& at = k.attrs();
      if (x.rank < 2 || y.rank != 2) k.fail("x {} must be [.., k] of rank >= 2 and the weight {} [k,n]", x.str(), y.str());
      const int64_t kk = at.trans_b ? y[1] : y[0], n = at.trans_b ? y[0] : y[1];
      if (x.last() != kk) k.fail("inner dims of {} and {} differ: {} != {}", x.str(), y.str(), x.last(), kk);
      k.numel("bias", c.in[2].shape, n);
      k.numel("output", c.out.shape, x.rows() * n);
      if (c.op == OpKind::linear_add) k.numel("residual", c.in[3].shape, x.rows() * n);
      break;
    }
    case OpKind::matmul_add:
      check_matmul(k, c);
      k.numel("accumulated input", c.in[2].shape, c.out.shape.numel());
      break;
    case OpKind::matmul_act_grad:
      check_matmul(k, c);
      if (k.attrs().act == Act::none) k.fail("act is none; it must be relu or gelu");
      k.numel("activation input", c.in[2].shape, c.out.shape.numel());
      break;
    case OpKind::matmul_heads: {
      HeadsGeometry hg;
      std::string why;
      if (!heads_geometry(x, y, k.attrs(), hg, &why)) k.fail("{}", why);
      k.numel("output", c.out.shape, hg.out_shape.numel());
      break;
    }
    case OpKind::matmul_bias_grad:
      if (x.rank != 2 || y.rank != 2 || x[0] != y[0])
        k.fail("a {} and dz {} must be [rows,k] and [rows,n] with the same rows", x.str(), y.str());
      k.numel("output", c.out.shape, x[1] * y[1]);
      k.numel("second output (bias gradient)", c.out2.shape, y[1]);
      break;
    case OpKind::layernorm_grad_params:
      k.numel("x", y, g.n);
      k.numel("output (dgamma)", c.out.shape, x.last());
      k.numel("second output (dbeta)", c.out2.shape, x.last());
      break;
    case OpKind::fused_elementwise: check_fused_elementwise(k, c, g); break;
    case OpKind::sgd_multi:
    case OpKind::sgd_momentum_multi:
    case OpKind::sgd_multi_cast:
    case OpKind::sgd_momentum_multi_cast: check_multi_update(k, c); break;
    case OpKind::adamw:
    case OpKind::adamw_multi:
    case OpKind::adamw_multi_cast: check_adamw(k, c); break;
    case OpKind::global_norm:
      k.numel("output", c.out.shape, 1);
      break;
    case OpKind::clip_by_norm:
      k.numel("norm", y, 1);
      k.numel("output", c.out.shape, g.n);
      break;
    case OpKind::matmul_sgd_momentum: {
      const Shape& a = y;
      const Shape& dz = c.in[3].shape;
      if (x.rank != 2 || a.rank != 2 || dz.rank != 2 || a[0] != dz[0] || a[1] != x[0] || dz[1] != x[1])
        k.fail("param {}, a {} and dz {} must be [k,n], [rows,k] and [rows,n], so that a^T dz is param's shape",
               x.str(), a.str(), dz.str());
      k.numel("velocity", c.in[2].shape, g.n);
      check_written_apart(k, c);
      g.rows = a[0];  // the product's inner dimension
      g.cols = x[1];
      break;
    }
    case OpKind::attention:
    case OpKind::attention_lse:
    case OpKind::attention_grad:
    case OpKind::attention_fwd_lse: check_attention(k, c, g); break;
    case OpKind::where: {
      Shape out;
      std::string why;
      if (!broadcast_shapes({x, y, c.in[2].shape}, out, &why)) k.fail("{}", why);
      k.numel("output", c.out.shape, out.numel());
      if (c.out.shape.rank != out.rank) k.fail("the output is {} but the inputs broadcast to {}", c.out.shape.str(), out.str());
      g.n = out.numel();
      break;
    }
    default: k.fail("has no call check; give it a case in kernels/op_call_check.cpp or the kSameShape flag in graph/op.h");
  }
  return g;
}

}  // namespace tg::kernels
