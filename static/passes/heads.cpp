// The heads pass: attention's batched products read q, k and v where the linear layers
// wrote them, and write the context where the output projection reads it.
//
// A transformer block splits a [B, S, H*d] projection into heads with reshape [B, S, H, d],
// transpose of the middle axes and reshape [B*H, S, d]: the transpose is a kernel that
// copies the tensor. The merge after the attention is the same chain backwards, and
// autodiff gives each one its mirror in the backward graph. Every matmul (rank 3,
// batched) whose operand is such a split reads the split's source instead, as a head view
// (graph/heads.h), and one whose only reader is such a merge writes the merge's result
// directly: matmul_heads. Splits that no node reads any more go too; a split still read by
// another op (not a matmul) stays for it. The products are the same; only their operands'
// addresses and leading dimensions change, so the CPU gives the unfused graph's bits.
//
// On the GPU each matmul_heads is one pointer-array GEMM (kernels/cuda/gemm/gemm_router.cpp). It
// leaves the graph as it is in the batch-invariant matmul mode, which has no head-view
// kernel.
#include <array>
#include <vector>

#include "kernels/gemm/gemm_mode.h"
#include "static/passes/pass.h"
#include "static/passes/rewrite.h"

namespace tg {

namespace {

// The head split's order on its rank-4 input; the entries past that rank are never read.
bool swaps_middle(const Perm& p) { return p[0] == 0 && p[1] == 2 && p[2] == 1 && p[3] == 3; }

const Shape& shape_of(const Graph& g, int v) { return g.values[static_cast<size_t>(v)].shape; }

// reshape [B, S, H*d] -> [B, S, H, d] -> transpose(0, 2, 1, 3) -> [B, H, S, d] -> reshape [B*H, S, d]
// ending at v: the source value, H and the chain's nodes (first reshape, transpose, last).
struct Split {
  int src = -1;
  int64_t heads = 0;
  std::array<int, 3> nodes{{-1, -1, -1}};
};

bool as_split(const Graph& g, int v, Split& s) {
  const int r2 = g.values[static_cast<size_t>(v)].producer;
  if (r2 < 0 || g.nodes[static_cast<size_t>(r2)].op != OpKind::reshape) return false;
  const int t4 = g.nodes[static_cast<size_t>(r2)].inputs[0];
  const int t = g.values[static_cast<size_t>(t4)].producer;
  if (t < 0 || g.nodes[static_cast<size_t>(t)].op != OpKind::transpose ||
      !swaps_middle(g.nodes[static_cast<size_t>(t)].attrs.perm))
    return false;
  const int s4 = g.nodes[static_cast<size_t>(t)].inputs[0];
  const int r1 = g.values[static_cast<size_t>(s4)].producer;
  if (r1 < 0 || g.nodes[static_cast<size_t>(r1)].op != OpKind::reshape) return false;
  const int src = g.nodes[static_cast<size_t>(r1)].inputs[0];
  const Shape &x = shape_of(g, src), &x4 = shape_of(g, s4), &out = shape_of(g, v);
  // src [B, S, H*d], x4 [B, S, H, d], out [B*H, S, d]
  if (x.rank != 3 || x4.rank != 4 || out.rank != 3) return false;
  if (x4[0] != x[0] || x4[1] != x[1] || x4[2] * x4[3] != x[2]) return false;
  if (out[0] != x4[0] * x4[2] || out[1] != x4[1] || out[2] != x4[3]) return false;
  s = {src, x4[2], {{r1, t, r2}}};
  return true;
}

// The mirror: v [B*H, S, d] read only by reshape [B, H, S, d], it only by the transpose,
// it only by reshape [B, S, H*d]: the merged value and the chain's nodes.
struct Merge {
  int dst = -1;
  int64_t heads = 0;
  std::array<int, 3> nodes{{-1, -1, -1}};
};

bool as_merge(const Graph& g, const GraphRewrite& rw, int v, Merge& m) {
  auto only_reader = [&](int value, OpKind op) {
    const std::vector<int>& c = rw.consumers()[static_cast<size_t>(value)];
    if (c.size() != 1 || g.nodes[static_cast<size_t>(c[0])].op != op || !rw.only_read_by(value, c[0])) return -1;
    return c[0];
  };
  const int r1 = only_reader(v, OpKind::reshape);
  if (r1 < 0) return false;
  const int x4 = g.nodes[static_cast<size_t>(r1)].outputs[0];
  const int t = only_reader(x4, OpKind::transpose);
  if (t < 0 || !swaps_middle(g.nodes[static_cast<size_t>(t)].attrs.perm)) return false;
  const int y4 = g.nodes[static_cast<size_t>(t)].outputs[0];
  const int r2 = only_reader(y4, OpKind::reshape);
  if (r2 < 0) return false;
  const int dst = g.nodes[static_cast<size_t>(r2)].outputs[0];
  const Shape &in = shape_of(g, v), &a = shape_of(g, x4), &y = shape_of(g, dst);
  // in [B*H, S, d], a [B, H, S, d], y [B, S, H*d]
  if (in.rank != 3 || a.rank != 4 || y.rank != 3) return false;
  if (in[0] != a[0] * a[1] || in[1] != a[2] || in[2] != a[3]) return false;
  if (y[0] != a[0] || y[1] != a[2] || y[2] != a[1] * a[3]) return false;
  m = {dst, a[1], {{r1, t, r2}}};
  return true;
}

}  // namespace

Graph pass_heads(const Graph& g) {
  if (kernels::batch_invariant_matmul()) return g;
  GraphRewrite rw(g);
  // Per split chain (keyed by its last node): how many of its readers were rewritten.
  std::vector<int> rewritten_reads(g.nodes.size(), 0);
  std::vector<Split> splits;
  // The sources rewritten nodes read as head views: a matmul whose result is one must keep
  // writing it, so its merge (if the chain is one) stays.
  std::vector<bool> split_source(g.values.size(), false);
  // A split is usable while its chain and its source's producer are still in the graph (a
  // merge rewrite removes its chain and makes its matmul write elsewhere).
  auto usable = [&](const Split& s) {
    for (int c : s.nodes)
      if (rw.removed(c)) return false;
    const int p = rw.producer(s.src);
    return p < 0 || !rw.removed(p);
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    const int id = static_cast<int>(i);
    if (n.op != OpKind::matmul || n.inputs.size() != 2 || n.outputs.size() != 1) continue;
    if (shape_of(g, n.inputs[0]).rank != 3 || shape_of(g, n.inputs[1]).rank != 3) continue;
    Split sa, sb;
    Merge mo;
    const bool va = as_split(g, n.inputs[0], sa) && usable(sa), vb = as_split(g, n.inputs[1], sb) && usable(sb);
    bool vo = as_merge(g, rw, n.outputs[0], mo) && !split_source[static_cast<size_t>(n.outputs[0])];
    for (int c : mo.nodes) vo = vo && !rw.removed(c);
    if (!va && !vb && !vo) continue;
    // One head count for the node, from whichever parts are head views.
    int64_t heads = va ? sa.heads : vb ? sb.heads : mo.heads;
    if ((va && sa.heads != heads) || (vb && sb.heads != heads) || (vo && mo.heads != heads)) continue;
    Node f;
    f.name = n.name;
    f.op = OpKind::matmul_heads;
    f.inputs = {va ? sa.src : n.inputs[0], vb ? sb.src : n.inputs[1]};
    f.outputs = {vo ? mo.dst : n.outputs[0]};
    f.attrs.trans_a = n.attrs.trans_a;
    f.attrs.trans_b = n.attrs.trans_b;
    f.attrs.heads = HeadView{heads, va, vb, vo};
    rw.remove(id);
    int anchor = id;
    if (vo) {
      for (int c : mo.nodes) rw.remove(c);
      anchor = mo.nodes[2];
      f.name = g.nodes[static_cast<size_t>(anchor)].name;
    }
    rw.add_node(std::move(f), anchor);
    // A node reading the same split twice (q q^T) counts once per input.
    for (const Split* s : {va ? &sa : nullptr, vb ? &sb : nullptr}) {
      if (!s) continue;
      ++rewritten_reads[static_cast<size_t>(s->nodes[2])];
      split_source[static_cast<size_t>(s->src)] = true;
      splits.push_back(*s);
    }
  }
  // Splits whose every read was rewritten go, chain node by chain node, each only when
  // nothing else reads what it made.
  for (const Split& s : splits) {
    const int last = s.nodes[2];
    if (rw.removed(last)) continue;
    const int v = g.nodes[static_cast<size_t>(last)].outputs[0];
    int reads = 0;
    for (int c : rw.consumers()[static_cast<size_t>(v)])
      for (int in : g.nodes[static_cast<size_t>(c)].inputs) reads += in == v;
    if (rw.is_output(v) || reads != rewritten_reads[static_cast<size_t>(last)]) continue;
    rw.remove(last);
    const int t = s.nodes[1], r1 = s.nodes[0];
    if (rw.only_read_by(g.nodes[static_cast<size_t>(t)].outputs[0], last)) {
      rw.remove(t);
      if (rw.only_read_by(g.nodes[static_cast<size_t>(r1)].outputs[0], t)) rw.remove(r1);
    }
  }
  return rw.finish();
}

}  // namespace tg
