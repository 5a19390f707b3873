// The fused attention ops on the CPU (graph/attention.h): the reference the CUDA kernels are
// checked against. Plain loops over one query row at a time, dot products and sums in
// double; scratch of one score row per call, never the S x S scores. The keys a query sees
// are a prefix (causal, the padding mask's length, or both), so masking is a shorter loop.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/attention.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/indices.h"

namespace tg::kernels {

namespace {

AttentionGeometry geometry(const OpCall& c) {
  AttentionGeometry g;
  std::string why;
  const Shape& q = c.in[c.op == OpKind::attention_grad ? 1 : 0].shape;
  if (!attention_geometry(q, *c.attrs, g, &why))
    throw std::invalid_argument(std::string("run_cpu ") + op_name(c.op) + ": " + why);
  return g;
}

// Row r of matrix m (= b * heads + h) of a head view.
struct Views {
  AttentionGeometry g;
  bool causal = false;
  std::vector<int64_t> lengths;  // each sequence's key count (graph/attention.h), seq without a mask
  int64_t offset(int64_t m, int64_t r) const {
    return (m / g.heads) * g.seq * g.ld() + (m % g.heads) * g.dh + r * g.ld();
  }
  // The keys query i of matrix m sees, a prefix: 0..i when causal, those below the length.
  int64_t keys(int64_t m, int64_t i) const {
    return std::min(causal ? i + 1 : g.seq, lengths[static_cast<size_t>(m / g.heads)]);
  }
};

Views views(const OpCall& c) {
  Views v{geometry(c), c.attrs->causal, {}};
  v.lengths.assign(static_cast<size_t>(v.g.batch), v.g.seq);
  if (!op_has_key_lengths(c.op, c.num_inputs)) return v;
  const TensorView& t = c.input(c.num_inputs - 1);
  for (int64_t b = 0; b < v.g.batch; ++b) {
    int64_t n = 0;
    if (!read_index(t, b, n))
      throw std::invalid_argument(std::string("run_cpu ") + op_name(c.op) + ": key length " + std::to_string(b) +
                                  " is not a whole number; give each sequence's count of real keys");
    v.lengths[static_cast<size_t>(b)] = std::clamp<int64_t>(n, 0, v.g.seq);
  }
  return v;
}

double dot(const float* a, const float* b, int64_t n) {
  double s = 0.0;
  for (int64_t d = 0; d < n; ++d) s += static_cast<double>(a[d]) * b[d];
  return s;
}

// The scaled scores of query i of matrix m against its keys into s; returns their
// logsumexp (0 for a row without keys: graph/attention.h).
double score_row(const Views& v, const float* q, const float* k, int64_t m, int64_t i, const Attrs& at,
                 std::vector<double>& s) {
  const int64_t nk = v.keys(m, i);
  if (nk == 0) {
    s.clear();
    return 0.0;
  }
  s.resize(static_cast<size_t>(nk));
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < nk; ++j) {
    s[static_cast<size_t>(j)] = at.alpha * dot(q + v.offset(m, i), k + v.offset(m, j), v.g.dh);
    mx = std::max(mx, s[static_cast<size_t>(j)]);
  }
  double sum = 0.0;
  for (int64_t j = 0; j < nk; ++j) sum += std::exp(s[static_cast<size_t>(j)] - mx);
  return mx + std::log(sum);
}

void attention(const OpCall& c, const Views& v) {
  const float *q = c.in[0].data, *k = c.in[1].data, *val = c.in[2].data;
  std::vector<double> s, acc(static_cast<size_t>(v.g.dh));
  for (int64_t m = 0; m < v.g.rows(); ++m)
    for (int64_t i = 0; i < v.g.seq; ++i) {
      const double lse = score_row(v, q, k, m, i, *c.attrs, s);
      std::fill(acc.begin(), acc.end(), 0.0);
      for (size_t j = 0; j < s.size(); ++j) {
        const double p = std::exp(s[j] - lse);
        const float* vj = val + v.offset(m, static_cast<int64_t>(j));
        for (int64_t d = 0; d < v.g.dh; ++d) acc[static_cast<size_t>(d)] += p * vj[d];
      }
      float* o = c.out.data + v.offset(m, i);
      for (int64_t d = 0; d < v.g.dh; ++d) o[d] = static_cast<float>(acc[static_cast<size_t>(d)]);
    }
}

void attention_lse(const OpCall& c, const Views& v) {
  std::vector<double> s;
  for (int64_t m = 0; m < v.g.rows(); ++m)
    for (int64_t i = 0; i < v.g.seq; ++i) {
      float* pair = c.out.data + (m * v.g.seq + i) * 2;
      pair[0] = static_cast<float>(score_row(v, c.in[0].data, c.in[1].data, m, i, *c.attrs, s));
      pair[1] = 0.0f;  // an f32 statistic is exact in hi; 16-bit calls split it (cpu_attention_split_lse)
    }
}

// dq, dk, dv of each matrix from the probabilities recomputed from lse (hi + lo):
// D_i = dout_i . out_i, dp_ij = dout_i . v_j, ds_ij = p_ij (dp_ij - D_i),
// dq_i = alpha sum_j ds_ij k_j, dk_j = alpha sum_i ds_ij q_i, dv_j = sum_i p_ij dout_i.
void attention_grad(const OpCall& c, const Views& v) {
  const float *dout = c.in[0].data, *q = c.in[1].data, *k = c.in[2].data, *val = c.in[3].data, *out = c.in[4].data,
              *lse = c.in[5].data;
  const Attrs& at = *c.attrs;
  const int64_t S = v.g.seq, dh = v.g.dh, part = v.g.batch * S * v.g.ld();
  std::vector<double> dq(static_cast<size_t>(dh)), dk(static_cast<size_t>(S * dh)), dv(static_cast<size_t>(S * dh));
  for (int64_t m = 0; m < v.g.rows(); ++m) {
    std::fill(dk.begin(), dk.end(), 0.0);
    std::fill(dv.begin(), dv.end(), 0.0);
    for (int64_t i = 0; i < S; ++i) {
      const float* qi = q + v.offset(m, i);
      const float* doi = dout + v.offset(m, i);
      const double row_lse = static_cast<double>(lse[(m * S + i) * 2]) + lse[(m * S + i) * 2 + 1];
      const double D = dot(doi, out + v.offset(m, i), dh);
      std::fill(dq.begin(), dq.end(), 0.0);
      for (int64_t j = 0; j < v.keys(m, i); ++j) {
        const float* kj = k + v.offset(m, j);
        const double p = std::exp(at.alpha * dot(qi, kj, dh) - row_lse);
        const double ds = p * (dot(doi, val + v.offset(m, j), dh) - D);
        for (int64_t d = 0; d < dh; ++d) {
          dq[static_cast<size_t>(d)] += at.alpha * ds * kj[d];
          dk[static_cast<size_t>(j * dh + d)] += at.alpha * ds * qi[d];
          dv[static_cast<size_t>(j * dh + d)] += p * doi[d];
        }
      }
      float* o = c.out.data + v.offset(m, i);
      for (int64_t d = 0; d < dh; ++d) o[d] = static_cast<float>(dq[static_cast<size_t>(d)]);
    }
    for (int64_t j = 0; j < S; ++j)
      for (int64_t d = 0; d < dh; ++d) {
        c.out.data[part + v.offset(m, j) + d] = static_cast<float>(dk[static_cast<size_t>(j * dh + d)]);
        c.out.data[2 * part + v.offset(m, j) + d] = static_cast<float>(dv[static_cast<size_t>(j * dh + d)]);
      }
  }
}

}  // namespace

void cpu_attention_op(const OpCall& c) {
  const Views v = views(c);
  switch (c.op) {
    case OpKind::attention: return attention(c, v);
    case OpKind::attention_lse: return attention_lse(c, v);
    case OpKind::attention_grad: return attention_grad(c, v);
    case OpKind::attention_fwd_lse: {
      // The two references, so that the fused op has the bits of the ops it replaces.
      attention(c, v);
      OpCall lse = c;
      lse.out = c.out2;
      return attention_lse(lse, v);
    }
    default: throw std::invalid_argument(std::string("cpu_attention_op: ") + op_name(c.op) + " is not an attention op");
  }
}

void cpu_attention_split_lse(float* pairs, int64_t rows, DType dt) {
  for (int64_t r = 0; r < rows; ++r) split_lse(pairs[2 * r], dt, pairs[2 * r], pairs[2 * r + 1]);
}

}  // namespace tg::kernels
