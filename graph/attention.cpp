#include "graph/attention.h"

#include <cmath>

#include <fmt/format.h>

namespace tg {

bool attention_geometry(const Shape& q, const Attrs& at, AttentionGeometry& g, std::string* why) {
  const int64_t heads = at.heads.count;
  if (heads < 1) {
    if (why) *why = "attrs.heads.count is not set; give the number of heads (1 or more)";
    return false;
  }
  if (q.rank != 3) {
    if (why) *why = fmt::format("q {} must be a head view [batch, seq, heads * dh] of rank 3", q.str());
    return false;
  }
  if (q[2] % heads != 0) {
    if (why)
      *why = fmt::format("q {} has a last dim that is not a multiple of heads = {}; each head takes last / heads dims",
                         q.str(), heads);
    return false;
  }
  if (!std::isfinite(at.alpha)) {
    if (why) *why = fmt::format("alpha = {} is the scores' scale and must be finite (1 / sqrt(dh) is usual)", at.alpha);
    return false;
  }
  g.batch = q[0];
  g.heads = heads;
  g.seq = q[1];
  g.dh = q[2] / heads;
  return true;
}

}  // namespace tg
