#include "graph/batch_norm.h"

#include <fmt/format.h>

namespace tg {

namespace {
bool fail(std::string* why, std::string msg) {
  if (why) *why = std::move(msg);
  return false;
}
// batch_norm_fold: the conv weight w [K, ...] scaled per output channel (dim 0), and the
// statistics of those K channels.
bool fold_geometry(const Shape* in, float eps, BatchNormGeometry& g, Shape& out, std::string* why) {
  const Shape& w = in[0];
  if (w.rank < 2)
    return fail(why, fmt::format("w is {} of rank {}; it must be a conv weight [K, C/groups, R, S]", w.str(), w.rank));
  if (!(eps > 0.0f)) return fail(why, fmt::format("eps = {} must be > 0 (1e-5 is usual)", eps));
  g.n = 1;
  g.c = w[0];
  g.inner = w.numel() / w[0];
  for (int i = 1; i < 3; ++i)
    if (in[i] != Shape{g.c})
      return fail(why, fmt::format("{} is {} but w {} has {} output channels (dim 0); it must be [{}]",
                                   i == 1 ? "gamma" : "beta", in[i].str(), w.str(), g.c, g.c));
  if (in[3] != Shape{2, g.c})
    return fail(why, fmt::format("stats is {}; it must be [2, {}]: the running mean, then the running variance",
                                 in[3].str(), g.c));
  out = w;
  return true;
}

}  // namespace

bool batch_norm_geometry(OpKind op, const Shape* in, float eps, bool channels_last, BatchNormGeometry& g, Shape& out,
                         std::string* why) {
  if (op == OpKind::batch_norm_fold) return fold_geometry(in, eps, g, out, why);
  if (op == OpKind::batch_norm_stats_blend) {
    // stats and the batch's moments, both [2, C]: 2C values blended one by one.
    if (in[0].rank != 2 || in[0][0] != 2)
      return fail(why, fmt::format("stats is {}; it must be [2, C]: the running mean, then the running variance",
                                   in[0].str()));
    if (in[1] != in[0])
      return fail(why, fmt::format("moments is {} but stats is {}; they must have one shape (batch_norm_moments' "
                                   "second output)", in[1].str(), in[0].str()));
    g.n = 1;
    g.c = in[0][1];
    g.inner = 1;
    out = Shape{};
    return true;
  }
  // x, and the inputs that must be [C] or x's shape.
  const bool update = op == OpKind::batch_norm_stats_update;
  const bool with_gamma = op == OpKind::batch_norm_grad_x || op == OpKind::batch_norm_grad;
  const bool x_second = update || with_gamma || op == OpKind::batch_norm_grad_gamma;
  const bool grad = x_second && !update;
  const Shape& x = x_second ? in[1] : in[0];
  if (x.rank < 2)
    return fail(why, fmt::format("x is {} of rank {}; it must be {}", x.str(), x.rank,
                                 channels_last ? "[N, ..., C] (NHWC, or [N, C])" : "[N, C, ...] (NCHW, or [N, C])"));
  const bool beta = op == OpKind::batch_norm_grad_beta;  // dy alone: no statistics, no eps
  if (!update && !beta && !(eps > 0.0f)) return fail(why, fmt::format("eps = {} must be > 0 (1e-5 is usual)", eps));
  const int channel_dim = channels_last ? x.rank - 1 : 1;
  g.channels_last = channels_last;
  g.n = x[0];
  g.c = x[channel_dim];
  g.inner = 1;
  for (int d = 1; d < x.rank; ++d)
    if (d != channel_dim) g.inner *= x[d];
  const Shape channels{g.c};
  auto per_channel = [&](const Shape& s, const char* what) {
    return s == channels ? true
                         : fail(why, fmt::format("{} is {} but x {} has {} channels (dim {}); it must be [{}]", what,
                                                 s.str(), x.str(), g.c, channel_dim, g.c));
  };
  if (grad && in[0] != x)
    return fail(why, fmt::format("dy is {} but x is {}; dy must have x's shape", in[0].str(), x.str()));
  auto running = [&](const Shape& s) {
    return s == Shape{2, g.c} ? true
                              : fail(why, fmt::format("stats is {}; it must be [2, {}]: the running mean, then the "
                                                      "running variance", s.str(), g.c));
  };
  switch (op) {
    case OpKind::batch_norm_stats_update:
      // The unbiased variance divides by count - 1.
      if (g.count() < 2)
        return fail(why, fmt::format("x {} has {} element(s) per channel; the running variance needs at least 2",
                                     x.str(), g.count()));
      if (!running(in[0])) return false;
      out = Shape{};
      return true;
    case OpKind::batch_norm_moments:
      if (g.count() < 2)
        return fail(why, fmt::format("x {} has {} element(s) per channel; the unbiased variance needs at least 2",
                                     x.str(), g.count()));
      [[fallthrough]];
    case OpKind::batch_norm:
      if (!per_channel(in[1], "gamma") || !per_channel(in[2], "beta")) return false;
      break;
    case OpKind::batch_norm_grad_x:
    case OpKind::batch_norm_grad:
      if (!per_channel(in[2], "gamma")) return false;
      break;
    case OpKind::batch_norm_inference:
      if (!per_channel(in[1], "gamma") || !per_channel(in[2], "beta")) return false;
      if (!running(in[3])) return false;
      break;
    default: break;
  }
  out = op == OpKind::batch_norm_grad_gamma || beta ? channels : x;
  return true;
}

}  // namespace tg
