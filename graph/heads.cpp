#include "graph/heads.h"

#include <fmt/format.h>

namespace tg {

namespace {

// Operand x as matrices: packed [N, r, c], or a head view [N / H, r, H*c].
bool operand(const char* what, const Shape& x, bool view, int64_t heads, HeadsMatrix& mtx, int64_t& batch,
             std::string* why) {
  if (x.rank != 3) {
    if (why)
      *why = fmt::format("{} {} must be rank 3: [N, rows, cols] packed or [N / heads, rows, heads * cols] as a head view",
                         what, x.str());
    return false;
  }
  mtx.view = view;
  mtx.rows = x[1];
  if (view) {
    if (x[2] % heads != 0) {
      if (why) *why = fmt::format("{} {} is a head view of {} heads, but its last dim is not a multiple of {}", what,
                                  x.str(), heads, heads);
      return false;
    }
    mtx.cols = x[2] / heads;
    mtx.ld = x[2];
    batch = x[0] * heads;
  } else {
    mtx.cols = x[2];
    mtx.ld = x[2];
    batch = x[0];
  }
  return true;
}

}  // namespace

bool heads_geometry(const Shape& a, const Shape& b, const Attrs& at, HeadsGeometry& g, std::string* why) {
  const HeadView& hv = at.heads;
  if (hv.count < 1) {
    if (why) *why = "attrs.heads.count is not set; give the number of heads (1 or more)";
    return false;
  }
  g.heads = hv.count;
  int64_t na = 0, nb = 0;
  if (!operand("a", a, hv.a, hv.count, g.a, na, why) || !operand("b", b, hv.b, hv.count, g.b, nb, why)) return false;
  if (na != nb) {
    if (why)
      *why = fmt::format("a {} and b {} hold {} and {} matrices (a head view holds its first dim x {}); they must match",
                         a.str(), b.str(), na, nb, hv.count);
    return false;
  }
  g.batch = na;
  g.m = at.trans_a ? g.a.cols : g.a.rows;
  g.k = at.trans_a ? g.a.rows : g.a.cols;
  const int64_t kb = at.trans_b ? g.b.cols : g.b.rows;
  g.n = at.trans_b ? g.b.rows : g.b.cols;
  if (g.k != kb) {
    if (why)
      *why = fmt::format("inner dims differ: op(a) of {} is [{}, {}] and op(b) of {} is [{}, {}] per matrix", a.str(),
                         g.m, g.k, b.str(), kb, g.n);
    return false;
  }
  if (g.batch % hv.count != 0) {
    if (why) *why = fmt::format("{} matrices do not split into {} heads; give a count that divides them", g.batch, hv.count);
    return false;
  }
  g.out.view = hv.out;
  g.out.rows = g.m;
  g.out.cols = g.n;
  if (hv.out) {
    g.out.ld = g.n * hv.count;
    g.out_shape = Shape{g.batch / hv.count, g.m, g.n * hv.count};
  } else {
    g.out.ld = g.n;
    g.out_shape = Shape{g.batch, g.m, g.n};
  }
  return true;
}

}  // namespace tg
