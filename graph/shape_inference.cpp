#include "graph/shape_inference.h"

#include <cmath>

#include <fmt/ranges.h>

#include <limits>

#include "graph/attention.h"
#include "graph/batch_norm.h"
#include "graph/broadcast.h"
#include "graph/conv.h"
#include "graph/errors.h"
#include "graph/heads.h"

namespace tg {

namespace {

std::string shapes_str(const std::vector<Shape>& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + s[i].str();
  return out;
}

void require_same(const char* op, const std::string& node, const Shape& a, const Shape& b) {
  if (a != b)
    graph_error("{} {}: shapes {} and {} differ; both inputs must have the same shape "
                "(use bias_add for a [n] vector, or reshape/broadcast first)",
                op, node, a.str(), b.str());
}

// dropout's rng state: [2], the seed and the offset (graph/dropout.h).
void require_rng_state(const char* op, const std::string& node, const Shape& rng) {
  if (rng != Shape{2})
    graph_error("{} {}: the rng state {} must be [2] (the seed, then the offset); make it with rng_state() "
                "(graph/dropout.h)", op, node, rng.str());
}

// The elements one dropout may draw for (kernels/philox.h, kDropoutMaxElements): the group
// index is one 32-bit counter word, four elements a group.
constexpr int64_t kDropoutMaxElements = (int64_t{1} << 32) * 4;

int normalize_axis(const char* op, const std::string& node, int axis, int rank) {
  int a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    graph_error("{} {}: axis {} is out of range for a rank-{} input; use an axis in [{}, {}]", op, node,
                axis, rank, -rank, rank - 1);
  return a;
}

Shape matmul_shape(const std::vector<Shape>& in, const Attrs& at, const std::string& node) {
  const Shape& a = in[0];
  const Shape& b = in[1];
  if (b.rank != 2 && b.rank != 3)
    graph_error("matmul {}: B is {} of rank {}; B must be a [k,n] matrix or a [batch,k,n] stack", node,
                b.str(), b.rank);
  if (a.rank < 2)
    graph_error("matmul {}: A is {} of rank {}; A must have at least 2 dims (reshape a vector to [1,n])",
                node, a.str(), a.rank);
  if (b.rank == 3 && a.rank != 3)
    graph_error("matmul {}: batched B {} needs a batched A of rank 3, got {}", node, b.str(), a.str());
  if (b.rank == 3 && a[0] != b[0])
    graph_error("matmul {}: batch dims differ: A {} has {}, B {} has {}; batched operands need equal batch",
                node, a.str(), a[0], b.str(), b[0]);
  const int64_t m = at.trans_a ? a[a.rank - 1] : a[a.rank - 2];
  const int64_t ka = at.trans_a ? a[a.rank - 2] : a[a.rank - 1];
  const int64_t kb = at.trans_b ? b[b.rank - 1] : b[b.rank - 2];
  const int64_t n = at.trans_b ? b[b.rank - 2] : b[b.rank - 1];
  if (ka != kb)
    graph_error("matmul {}: cannot multiply {}{} by {}{}: inner dims {} != {}; transpose an operand or "
                "fix its shape so that A's columns equal B's rows",
                node, a.str(), at.trans_a ? "^T" : "", b.str(), at.trans_b ? "^T" : "", ka, kb);
  Shape out = a;
  out[a.rank - 2] = m;
  out[a.rank - 1] = n;
  return out;
}

// The attention ops: every head view has q's shape; attention_grad's lse is attention_lse's.
// attention_fwd_lse's first output (attention's) is returned here; its second is lse_shape.
Shape attention_shape(OpKind op, const std::vector<Shape>& in, const Attrs& at, const std::string& node) {
  const char* name = op_name(op);
  const bool grad = op == OpKind::attention_grad;
  const Shape& q = in[grad ? 1 : 0];
  AttentionGeometry g;
  std::string why;
  if (!attention_geometry(q, at, g, &why)) graph_error("{} {}: {}", name, node, why);
  static const char* const kNames[] = {"dout", "q", "k", "v", "out"};
  const int views = op == OpKind::attention_lse ? 2 : grad ? 5 : 3;
  for (int i = 0; i < views; ++i)
    if (in[static_cast<size_t>(i)] != q)
      graph_error("{} {}: {} is {} but q is {}; q, k and v must have one shape [batch, seq, heads * dh] "
                  "(self-attention: one sequence length)",
                  name, node, kNames[grad ? i : i + 1], in[static_cast<size_t>(i)].str(), q.str());
  if (grad && in[5] != g.lse_shape())
    graph_error("{} {}: lse is {} but must be {}: attention_lse's output for this q", name, node, in[5].str(),
                g.lse_shape().str());
  if (op_has_key_lengths(op, static_cast<int>(in.size())) && in.back() != Shape{g.batch})
    graph_error("{} {}: the key lengths (last input) are {} but must be [{}]: one count per sequence of the batch",
                name, node, in.back().str(), g.batch);
  if (op == OpKind::attention_lse) return g.lse_shape();
  return grad ? g.grad_shape() : g.view_shape();
}

}  // namespace

namespace {
// What a shape rule returns: the first output's shape, and the second one's for the
// fused ops that have two (a Shape converts, for every other op).
struct OutShapes {
  Shape first, second;
  OutShapes(Shape a) : first(a) {}  // NOLINT: every single-output rule returns a Shape
  OutShapes(Shape a, Shape b) : first(a), second(b) {}
};
OutShapes infer_unchecked(OpKind op, const std::vector<Shape>& in, const Attrs& at, const std::string& node);

OutShapes infer_checked(OpKind op, const std::vector<Shape>& in, const Attrs& at, const std::string& node);
}  // namespace

Shape infer_shape(OpKind op, const std::vector<Shape>& in, const Attrs& at, const std::string& node) {
  return infer_checked(op, in, at, node).first;
}

std::vector<Shape> infer_shapes(OpKind op, const std::vector<Shape>& in, const Attrs& at, const std::string& node) {
  const OutShapes o = infer_checked(op, in, at, node);
  const int n = op_num_outputs(op);
  if (n == 0) return {};
  if (n == 1) return {o.first};
  return {o.first, o.second};
}

namespace {
OutShapes infer_checked(OpKind op, const std::vector<Shape>& in, const Attrs& at, const std::string& node) {
  if (static_cast<int>(op) >= kNumOps)
    graph_error("node {}: op kind {} is not an op; see graph/op.h for the list", node, static_cast<int>(op));
  const char* name = op_name(op);
  if (!op_arity_ok(op, static_cast<int>(in.size())))
    graph_error("{} {}: takes {}, got {} ({}); check the node's inputs list", name, node, op_arity_text(op),
                in.size(), shapes_str(in));
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i].rank < 0 || in[i].rank > kMaxRank)
      graph_error("{} {}: input {} has rank {}; ranks 0..{} are supported", name, node, i, in[i].rank, kMaxRank);
  for (size_t i = 0; i < in.size(); ++i)
    for (int d = 0; d < in[i].rank; ++d)
      if (in[i][d] <= 0)
        graph_error("{} {}: input {} has shape {} with dim {} = {}; every dim must be >= 1", name, node, i,
                    in[i].str(), d, in[i][d]);
  // Untrusted shapes (graph files, user code) can hold dims whose product does
  // not fit in int64; reject them before any rule multiplies dims.
  int64_t count = 0;
  for (size_t i = 0; i < in.size(); ++i)
    if (!numel_checked(in[i], count))
      graph_error("{} {}: input {} has shape {} whose element count or byte size overflows int64; use smaller dims",
                  name, node, i, in[i].str());
  const OutShapes out = infer_unchecked(op, in, at, node);
  for (const Shape* s : {&out.first, &out.second})
    if (s->rank > 0 && !numel_checked(*s, count))
      graph_error("{} {}: output shape {} (from inputs {}) has an element count or byte size that overflows int64; "
                  "use smaller dims", name, node, s->str(), shapes_str(in));
  return out;
}

// The bias of a fused GEMM: a [n] vector for an output whose last dim is n.
void require_bias(const char* op, const std::string& node, const Shape& bias, const Shape& out) {
  if (bias.rank != 1 || bias[0] != out.last())
    graph_error("{} {}: bias {} does not match the last dim of the product {}; the bias must be [{}]", op, node,
                bias.str(), out.str(), out.last());
}

// The output has the shape of the largest input; every other input has it too or is a
// [cols] row that the program reads at every row (a bias).
Shape fused_elementwise_shape(const std::vector<Shape>& in, const Attrs& at, const std::string& node) {
  const std::string err = ew_program_error(at.program, static_cast<int>(in.size()));
  if (!err.empty()) graph_error("fused_elementwise {}: {}", node, err);
  Shape out = in[0];
  for (const Shape& s : in)
    if (s.numel() > out.numel()) out = s;
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] != out && !(in[i].rank == 1 && in[i][0] == out.last()))
      graph_error("fused_elementwise {}: input {} is {}; every input has the output's shape {} or is a [{}] row "
                  "(read at every row, as a bias)", node, i, in[i].str(), out.str(), out.last());
  return out;
}

// An update's learning rate, and its momentum where it reads one.
void require_rates(OpKind op, const Attrs& at, const std::string& node) {
  const char* name = op_name(op);
  if (!(at.lr > 0.0f)) graph_error("{} {}: lr = {} must be > 0", name, node, at.lr);
  if (op_reads_attr(op, AttrId::momentum) && !(at.momentum >= 0.0f && at.momentum < 1.0f))
    graph_error("{} {}: momentum = {} must be in [0, 1)", name, node, at.momentum);
}

// Loss scaling's one-element values: a scale, a found-inf flag (graph/loss_scale.h).
void require_one(const char* op, const std::string& node, const Shape& s, const char* what) {
  if (s != Shape{1}) graph_error("{} {}: {} {} must be [1]", op, node, what, s.str());
}

// A guarded update's last input, the found-inf flag.
void require_guard(OpKind op, const std::vector<Shape>& in, const std::string& node) {
  if (op_update_guarded(op, static_cast<int>(in.size())))
    require_one(op_name(op), node, in.back(), "found-inf flag (the last input)");
}

// adamw's rule on every group: the gradient and both moments of the parameter's shape, a
// step count of one element; the hyperparameters in torch.optim.AdamW's ranges; a guarded
// update's flag of one element.
Shape adamw_shape(OpKind op, const std::vector<Shape>& in, const Attrs& at, const std::string& node) {
  const char* name = op_name(op);
  const size_t k = static_cast<size_t>(op_num_inputs(op));  // 5, or 6 with the low-precision copy last
  require_guard(op, in, node);
  const size_t groups = static_cast<size_t>(op_group_inputs(op, static_cast<int>(in.size())));
  for (size_t i = 0; i < groups; i += k) {
    for (size_t j = 1; j < k; ++j)
      if (j != 4 && (op_input_is_copy(op, static_cast<int>(i + j), static_cast<int>(in.size()))
                         ? !copy_shape_fits(in[i + j], in[i])
                         : in[i + j] != in[i]))
        graph_error("{} {}: group {} (inputs {}..{}): {} {} differs from the parameter {}; each group is a parameter, "
                    "its gradient, exp_avg and exp_avg_sq of its shape, and its step count [1]{}", name, node, i / k, i,
                    i + k - 1, j == 1 ? "the gradient" : j == 2 ? "exp_avg" : j == 3 ? "exp_avg_sq" : "the low-precision copy",
                    in[i + j].str(), in[i].str(),
                    k == 6 ? ", then its low-precision copy of its shape (or with padding rows)" : "");
    if (in[i + 4].numel() != 1)
      graph_error("{} {}: group {}: the step count (input {}) is {}; it must be one element, [1]", name, node, i / k,
                  i + 4, in[i + 4].str());
  }
  require_rates(op, at, node);
  const AdamAttr& a = at.adam;
  if (!(a.beta1 >= 0.0f && a.beta1 < 1.0f) || !(a.beta2 >= 0.0f && a.beta2 < 1.0f))
    graph_error("{} {}: betas ({}, {}) must be in [0, 1) (0.9, 0.999 are usual)", name, node, a.beta1, a.beta2);
  if (!(a.eps > 0.0f)) graph_error("{} {}: eps = {} must be > 0 (1e-8 is usual)", name, node, a.eps);
  if (!(a.weight_decay >= 0.0f) || !std::isfinite(a.weight_decay))
    graph_error("{} {}: weight_decay = {} must be finite and >= 0 (0.01 is usual)", name, node, a.weight_decay);
  return Shape{};
}

// sgd's and sgd_momentum's rules on every group.
Shape multi_update_shape(OpKind op, const std::vector<Shape>& in, const Attrs& at, const std::string& node) {
  const char* name = op_name(op);
  const size_t k = static_cast<size_t>(op_num_inputs(op));
  require_guard(op, in, node);
  const size_t groups = static_cast<size_t>(op_group_inputs(op, static_cast<int>(in.size())));
  for (size_t i = 0; i < groups; i += k)
    for (size_t j = 1; j < k; ++j)
      if (op_input_is_copy(op, static_cast<int>(i + j), static_cast<int>(in.size()))
              ? !copy_shape_fits(in[i + j], in[i])
              : in[i + j] != in[i])
        graph_error("{} {}: group {} (inputs {}..{}): {} {} differs from the parameter {}; each group is a parameter, "
                    "its gradient{} of the same shape (a copy may have padding rows)", name, node, i / k, i, i + k - 1,
                    j == 1 ? "gradient" : op_input_is_copy(op, static_cast<int>(i + j), static_cast<int>(in.size())) ? "low-precision copy" : "velocity",
                    in[i + j].str(), in[i].str(),
                    op_update_writes_copy(op) ? (k == 4 ? ", its velocity and its low-precision copy" : " and its low-precision copy")
                                              : k == 3 ? " and its velocity" : "");
  require_rates(op, at, node);
  return Shape{};
}

OutShapes infer_unchecked(OpKind op, const std::vector<Shape>& in, const Attrs& at, const std::string& node) {
  const char* name = op_name(op);

  if (op_keeps_shape(op)) {
    for (size_t i = 1; i < in.size(); ++i) require_same(name, node, in[0], in[i]);
    return in[0];
  }
  // The conv and batchnorm families: their geometry functions (graph/conv.h) say the shape
  // or why there is none.
  const bool conv = op_in_family(op, "conv");
  if (conv || op_in_family(op, "batchnorm")) {
    ConvGeometry cg;
    BatchNormGeometry bg;
    Shape out;
    std::string why;
    const bool ok = conv ? conv_op_geometry(op, in.data(), at.conv, cg, out, &why)
                         : batch_norm_geometry(op, in.data(), at.eps, at.channels_last, bg, out, &why);
    if (!ok) graph_error("{} {}: {}", name, node, why);
    if ((op == OpKind::batch_norm_stats_update || op == OpKind::batch_norm_stats_blend) &&
        !(at.momentum >= 0.0f && at.momentum <= 1.0f))
      graph_error("{} {}: momentum = {} must be in [0, 1] (0.1 is PyTorch's BatchNorm default)", name, node,
                  at.momentum);
    if (const std::string bad_act = act_refusal(op, at.act); !bad_act.empty())
      graph_error("{} {}: {}", name, node, bad_act);
    if (op == OpKind::batch_norm_fold) return OutShapes(out, Shape{bg.c});
    if (op == OpKind::batch_norm_grad || op == OpKind::batch_norm_moments) return OutShapes(out, Shape{2, bg.c});
    return out;
  }
  // The ops of the table's kSameShape flag and the conv and batchnorm families were handled
  // above; every other op has a case here, which tests/graph/op_table_test.cpp checks by running every op's samples.
  switch (op) {
    case OpKind::matmul: return matmul_shape(in, at, node);
    case OpKind::softmax:
      if (in[0].rank == 0) graph_error("softmax {}: input is a scalar; softmax needs at least one dim", node);
      if (normalize_axis(name, node, at.axis, in[0].rank) != in[0].rank - 1)
        graph_error("softmax {}: axis {} is not the last axis of {}; only the last axis is supported "
                    "(transpose first)", node, at.axis, in[0].str());
      return in[0];
    case OpKind::bias_add:
      if (in[1].rank != 1 || in[1][0] != in[0].last())
        graph_error("bias_add {}: bias {} does not match the last dim of {}; the bias must be [{}]", node,
                    in[1].str(), in[0].str(), in[0].last());
      return in[0];
    case OpKind::layernorm:
    case OpKind::layernorm_cast:
    case OpKind::layernorm_grad_x:
    case OpKind::layernorm_grad_x_acc: {
      const bool forward = op == OpKind::layernorm || op == OpKind::layernorm_cast;
      const Shape& x = forward ? in[0] : in[1];
      if (!forward) require_same(name, node, in[0], in[1]);
      if (op == OpKind::layernorm_grad_x_acc) require_same(name, node, in[0], in[3]);
      const Shape& g = in[forward ? 1 : 2];
      if (g.rank != 1 || g[0] != x.last())
        graph_error("{} {}: gamma {} does not match the last dim of {}; gamma must be [{}]", name, node,
                    g.str(), x.str(), x.last());
      if (forward && in[2] != g)
        graph_error("{} {}: beta {} differs from gamma {}; both must be [{}]", name, node, in[2].str(),
                    g.str(), x.last());
      if (!(at.eps > 0.0f))
        graph_error("{} {}: eps = {} must be > 0 (1e-5 is usual)", name, node, at.eps);
      return x;
    }
    case OpKind::layernorm_grad_gamma:
      require_same(name, node, in[0], in[1]);
      return Shape{in[0].last()};
    case OpKind::reduce_sum:
    case OpKind::reduce_mean: {
      const int axis = normalize_axis(name, node, at.axis, in[0].rank);
      if (in[0].rank == 1) return Shape{1};
      Shape out;
      for (int d = 0; d < in[0].rank; ++d)
        if (d != axis) out[out.rank++] = in[0][d];
      return out;
    }
    case OpKind::broadcast: {
      if (in[0].rank >= kMaxRank)
        graph_error("broadcast {}: input {} already has {} dims; at most {} are supported", node, in[0].str(),
                    in[0].rank, kMaxRank);
      if (at.size <= 0)
        graph_error("broadcast {}: size = {} must be >= 1 (the extent of the inserted axis)", node, at.size);
      const int axis = normalize_axis(name, node, at.axis, in[0].rank + 1);
      Shape out;
      for (int d = 0, s = 0; d <= in[0].rank; ++d) out[out.rank++] = d == axis ? at.size : in[0][s++];
      return out;
    }
    case OpKind::concat: {
      if (in[0].rank == 0) graph_error("concat {}: input 0 is a scalar; concat needs at least one dim", node);
      const int axis = normalize_axis(name, node, at.axis, in[0].rank);
      Shape out = in[0];
      for (size_t i = 1; i < in.size(); ++i) {
        bool fits = in[i].rank == in[0].rank;
        for (int d = 0; fits && d < in[0].rank; ++d) fits = d == axis || in[i][d] == in[0][d];
        if (!fits)
          graph_error("concat {}: input {} is {} but input 0 is {}; every input must have input 0's dims but "
                      "along axis {}", node, i, in[i].str(), in[0].str(), axis);
        out[axis] += in[i][axis];
      }
      return out;
    }
    case OpKind::slice: {
      if (in[0].rank == 0) graph_error("slice {}: input is a scalar; slice needs at least one dim", node);
      const int axis = normalize_axis(name, node, at.axis, in[0].rank);
      if (at.start < 0 || at.size < 1 || at.size > in[0][axis] || at.start > in[0][axis] - at.size)
        graph_error("slice {}: start {} and size {} do not fit axis {} of {} (extent {}); take start >= 0, size >= 1 "
                    "and start + size <= {}", node, at.start, at.size, axis, in[0].str(), in[0][axis], in[0][axis]);
      Shape out = in[0];
      out[axis] = at.size;
      return out;
    }
    case OpKind::transpose: {
      const int r = in[0].rank;
      bool seen[kMaxRank] = {};
      for (int d = 0; d < r; ++d) {
        int p = at.perm[static_cast<size_t>(d)];
        if (p < 0 || p >= r || seen[p])
          graph_error("transpose {}: perm [{}] is not a permutation of 0..{} for input {}: entry {} = {}; "
                      "list each axis of the input once", node, fmt::join(at.perm.begin(), at.perm.begin() + r, ","),
                      r - 1, in[0].str(), d, p);
        seen[p] = true;
      }
      Shape out;
      out.rank = r;
      for (int d = 0; d < r; ++d) out[d] = in[0][at.perm[static_cast<size_t>(d)]];
      return out;
    }
    case OpKind::reshape: {
      Shape out = at.shape;
      if (out.rank == 0) graph_error("reshape {}: target shape is empty; give the new shape in attrs.shape", node);
      int infer = -1;
      int64_t known = 1;
      for (int d = 0; d < out.rank; ++d) {
        if (out[d] == -1 && infer < 0) { infer = d; continue; }
        if (out[d] <= 0)
          graph_error("reshape {}: target {} has dim {} = {}; dims must be >= 1 (one may be -1)", node,
                      out.str(), d, out[d]);
        if (known > std::numeric_limits<int64_t>::max() / 8 / out[d])
          graph_error("reshape {}: cannot reshape {} ({} elements) to {}: the target's element count overflows "
                      "int64; element counts must match", node, in[0].str(), in[0].numel(), out.str());
        known *= out[d];
      }
      const int64_t total = in[0].numel();
      if (infer >= 0) {
        if (total % known != 0)
          graph_error("reshape {}: cannot reshape {} ({} elements) to {}: {} is not a multiple of {}", node,
                      in[0].str(), total, out.str(), total, known);
        out[infer] = total / known;
      } else if (known != total) {
        graph_error("reshape {}: cannot reshape {} ({} elements) to {} ({} elements); element counts must match",
                    node, in[0].str(), total, out.str(), known);
      }
      return out;
    }
    case OpKind::mse_loss:
      require_same(name, node, in[0], in[1]);
      return Shape{1};
    case OpKind::mse_loss_grad:
      require_same(name, node, in[0], in[1]);
      if (in[2] != Shape{1}) graph_error("mse_loss_grad {}: dloss {} must be [1]", node, in[2].str());
      return in[0];
    case OpKind::padded_mse_loss:
    case OpKind::padded_mse_loss_grad:
      require_same(name, node, in[0], in[1]);
      // Exactly [1], like the loss itself: [1,1] holds one element too, but is not the scalar the docs promise.
      if (in[2] != Shape{1})
        graph_error("{} {}: count {} must be [1] (the number of real, unpadded elements)", name, node, in[2].str());
      if (op == OpKind::padded_mse_loss) return Shape{1};
      if (in[3] != Shape{1}) graph_error("{} {}: dloss {} must be [1]", name, node, in[3].str());
      return in[0];
    case OpKind::cross_entropy:
    case OpKind::cross_entropy_grad:
      if (in[0].rank != 2)
        graph_error("{} {}: logits {} must be [n, classes]; reshape to 2 dims first", name, node, in[0].str());
      if (in[1].rank != 1 || in[1][0] != in[0][0])
        graph_error("{} {}: labels {} must be [{}], one class index per row of logits {}", name, node,
                    in[1].str(), in[0][0], in[0].str());
      if (at.size < 0 || at.size > in[0][1])
        graph_error("{} {}: size {} is not a class count of logits {}; give 0 (every column a class) or the "
                    "classes, at most {} (the columns past them are padding)", name, node, at.size, in[0].str(),
                    in[0][1]);
      if (op == OpKind::cross_entropy_grad) {
        if (in[2] != Shape{1}) graph_error("cross_entropy_grad {}: dloss {} must be [1]", node, in[2].str());
        return in[0];
      }
      return Shape{1};
    case OpKind::fill: {
      int64_t n = 0;
      if (at.shape.rank == 0 || !numel_checked(at.shape, n))
        graph_error("fill {}: shape {} is empty, has a dim < 1 or is too large; give attrs.shape with dims >= 1",
                    node, at.shape.str());
      return at.shape;
    }
    case OpKind::sgd:
    case OpKind::sgd_momentum:
      require_same(name, node, in[0], in[1]);
      if (op == OpKind::sgd_momentum) require_same(name, node, in[0], in[2]);
      require_guard(op, in, node);
      require_rates(op, at, node);
      return Shape{};
    case OpKind::unscale:
      require_one(name, node, in[1], "scale");
      return in[0];
    case OpKind::found_inf:
      require_one(name, node, in[1], "found");
      return Shape{1};
    case OpKind::update_scale:
      if (in[0] != Shape{3})
        graph_error("update_scale {}: scaler {} must be [3] (the scale, the growth tracker, the skipped steps)", node,
                    in[0].str());
      require_one(name, node, in[1], "found");
      if (!(at.growth_factor >= 1.0f) || !(at.backoff_factor > 0.0f && at.backoff_factor <= 1.0f) ||
          at.growth_interval < 1)
        graph_error("update_scale {}: growth_factor = {} must be >= 1, backoff_factor = {} in (0, 1] and "
                    "growth_interval = {} >= 1 (2, 0.5 and 2000 are usual)", node, at.growth_factor, at.backoff_factor,
                    at.growth_interval);
      return Shape{};
    case OpKind::matmul_sgd_momentum: {
      // (param[k,n], a[r,k], velocity[k,n], dz[r,n]): the gradient a^T dz is param's shape.
      const Shape &p = in[0], &a = in[1], &dz = in[3];
      if (p.rank != 2 || a.rank != 2 || dz.rank != 2 || a[0] != dz[0] || a[1] != p[0] || dz[1] != p[1])
        graph_error("matmul_sgd_momentum {}: param {}, a {} and dz {} must be [k,n], [rows,k] and [rows,n], so that "
                    "a^T dz is param's shape", node, p.str(), a.str(), dz.str());
      require_same(name, node, in[0], in[2]);
      require_rates(op, at, node);
      return Shape{};
    }
    case OpKind::linear:
    case OpKind::linear_add: {
      Attrs mm = at;
      mm.trans_a = false;
      if (in[1].rank != 2)
        graph_error("{} {}: weight {} must be a [k,n] matrix (or [n,k] with trans_b)", name, node, in[1].str());
      const Shape out = matmul_shape({in[0], in[1]}, mm, node);
      require_bias(name, node, in[2], out);
      if (op == OpKind::linear_add) require_same(name, node, out, in[3]);
      return out;
    }
    case OpKind::matmul_add: {
      const Shape out = matmul_shape({in[0], in[1]}, at, node);
      require_same(name, node, out, in[2]);
      return out;
    }
    case OpKind::matmul_act_grad: {
      if (at.act == Act::none)
        graph_error("matmul_act_grad {}: act is none; it must name the activation whose gradient the epilogue "
                    "applies (relu or gelu)", node);
      const Shape out = matmul_shape({in[0], in[1]}, at, node);
      require_same(name, node, out, in[2]);
      return out;
    }
    case OpKind::matmul_heads: {
      HeadsGeometry hg;
      std::string why;
      if (!heads_geometry(in[0], in[1], at, hg, &why)) graph_error("matmul_heads {}: {}", node, why);
      return hg.out_shape;
    }
    case OpKind::matmul_bias_grad:
      if (in[0].rank != 2 || in[1].rank != 2 || in[0][0] != in[1][0])
        graph_error("matmul_bias_grad {}: a {} and dz {} must be [rows,k] and [rows,n] with the same rows", node,
                    in[0].str(), in[1].str());
      return {Shape{in[0][1], in[1][1]}, Shape{in[1][1]}};
    case OpKind::layernorm_grad_params:
      require_same(name, node, in[0], in[1]);
      if (in[0].rank == 0) graph_error("layernorm_grad_params {}: dy is a scalar; it needs at least one dim", node);
      if (!(at.eps > 0.0f)) graph_error("layernorm_grad_params {}: eps = {} must be > 0 (1e-5 is usual)", node, at.eps);
      return {Shape{in[0].last()}, Shape{in[0].last()}};
    case OpKind::fused_elementwise: return fused_elementwise_shape(in, at, node);
    case OpKind::sgd_multi:
    case OpKind::sgd_momentum_multi:
    case OpKind::sgd_multi_cast:
    case OpKind::sgd_momentum_multi_cast: return multi_update_shape(op, in, at, node);
    case OpKind::adamw:
    case OpKind::adamw_multi:
    case OpKind::adamw_multi_cast: return adamw_shape(op, in, at, node);
    case OpKind::global_norm: return Shape{1};
    case OpKind::clip_by_norm:
      if (in[1].numel() != 1)
        graph_error("clip_by_norm {}: the norm (input 1) is {}; it must be one element, [1] (global_norm's output)",
                    node, in[1].str());
      if (!(at.max_norm > 0.0f) || !std::isfinite(at.max_norm))
        graph_error("clip_by_norm {}: max_norm = {} must be finite and > 0", node, at.max_norm);
      return in[0];
    case OpKind::attention:
    case OpKind::attention_lse:
    case OpKind::attention_grad: return attention_shape(op, in, at, node);
    case OpKind::attention_fwd_lse: {
      const Shape out = attention_shape(op, in, at, node);
      AttentionGeometry g;
      attention_geometry(in[0], at, g, nullptr);  // attention_shape has checked it
      return {out, g.lse_shape()};
    }
    case OpKind::where: {
      Shape out;
      std::string why;
      if (!broadcast_shapes(in, out, &why)) graph_error("where {}: {}", node, why);
      return out;
    }
    case OpKind::embedding: {
      if (in[0].rank != 2)
        graph_error("embedding {}: the table {} must be [vocabulary, dim]", node, in[0].str());
      if (in[1].rank < 1 || in[1].rank >= kMaxRank)
        graph_error("embedding {}: ids {} must have 1 to {} dims (the output adds the table's dim)", node,
                    in[1].str(), kMaxRank - 1);
      Shape out = in[1];
      out.dims[static_cast<size_t>(out.rank++)] = in[0][1];
      return out;
    }
    case OpKind::embedding_grad: {
      Shape ids = in[0];
      if (ids.rank >= 2) --ids.rank;
      if (in[0].rank < 2 || ids != in[1])
        graph_error("embedding_grad {}: dy {} must be the ids' shape {} with the table's dim last", node, in[0].str(),
                    in[1].str());
      if (at.size < 1)
        graph_error("embedding_grad {}: size = {} must be the table's vocabulary (its rows), >= 1", node, at.size);
      return Shape{at.size, in[0].last()};
    }
    case OpKind::dropout:
      require_rng_state(name, node, in[1]);
      if (!(at.p >= 0.0f && at.p < 1.0f))
        graph_error("dropout {}: p = {} must be in [0, 1) (the probability of zeroing an element; 0.1 is usual)", node,
                    at.p);
      if (at.rng_stream < 0 || at.rng_stream > 0xFFFFFFFFll)
        graph_error("dropout {}: rng_stream = {} must be in [0, 2^32): give each dropout of a model its own", node,
                    at.rng_stream);
      if (in[0].numel() > kDropoutMaxElements)
        graph_error("dropout {}: x {} has more than 2^34 elements, more than one rng stream draws for; split it",
                    node, in[0].str());
      return in[0];
    case OpKind::rng_advance:
      require_rng_state(name, node, in[0]);
      return Shape{};
    default: break;
  }
  graph_error("{} {}: op has no shape rule; give it one in graph/shape_inference.cpp or the kSameShape flag in "
              "graph/op.h", name, node);
}
}  // namespace

std::string act_refusal(OpKind op, Act a) {
  if (a == Act::none || a == Act::relu) return {};
  if (conv_has_epilogue(op))
    return fmt::format("act {} is not supported; a fused convolution applies none or relu", act_name(a));
  if (op == OpKind::batch_norm_moments)
    return fmt::format("act {} is not supported; a batch norm applies none or relu to its output", act_name(a));
  return {};
}

}  // namespace tg
