// Batch normalization per channel of [N, C, ...] and its gradients. Channel statistics are
// two-pass in double (the mean, then the mean of squared deviations), as layernorm's rows.
#include <cmath>

#include "kernels/cpu/cpu_kernels.h"

namespace tg::kernels {

namespace {

struct ChannelStats {
  double mean, rstd;
};

// The channel's mean and its sum of squared deviations.
struct Moments {
  double mean, squares;
};

Moments channel_moments(const float* x, const BatchNormGeometry& g, int64_t ch) {
  const int64_t count = g.count();
  double s = 0.0;
  for (int64_t e = 0; e < count; ++e) s += x[g.index(ch, e)];
  const double mean = s / static_cast<double>(count);
  double v = 0.0;
  for (int64_t e = 0; e < count; ++e) {
    const double d = x[g.index(ch, e)] - mean;
    v += d * d;
  }
  return {mean, v};
}

ChannelStats channel_stats(const float* x, const BatchNormGeometry& g, int64_t ch, double eps) {
  const Moments m = channel_moments(x, g, ch);
  return {m.mean, 1.0 / std::sqrt(m.squares / static_cast<double>(g.count()) + eps)};
}

// y = (x - mean) rstd gamma + beta over channel ch.
void normalize(const float* x, const float* gamma, const float* beta, float* y, const BatchNormGeometry& g, int64_t ch,
               ChannelStats st) {
  for (int64_t e = 0; e < g.count(); ++e) {
    const int64_t i = g.index(ch, e);
    y[i] = static_cast<float>((x[i] - st.mean) * st.rstd * gamma[ch] + beta[ch]);
  }
}

}  // namespace

void cpu_batch_norm_op(const OpCall& c, const BatchNormGeometry& g) {
  const double eps = c.attrs->eps;
  const float* a = c.in[0].data;
  const float* b = c.in[1].data;
  float* out = c.out.data;
  if (c.op == OpKind::batch_norm_stats_blend) {
    // a = stats, written in place; b = the batch's moments.
    const double m = c.attrs->momentum;
    float* stats = c.in[0].data;
    for (int64_t i = 0; i < 2 * g.c; ++i) stats[i] = bn_blend(stats[i], b[i], m);
    return;
  }
  for (int64_t ch = 0; ch < g.c; ++ch) {
    switch (c.op) {
      case OpKind::batch_norm: normalize(a, b, c.in[2].data, out, g, ch, channel_stats(a, g, ch, eps)); break;
      case OpKind::batch_norm_moments: {
        // batch_norm's y, and the batch's mean and unbiased variance (batch_norm_stats_update's).
        const Moments mo = channel_moments(a, g, ch);
        const double count = static_cast<double>(g.count());
        normalize(a, b, c.in[2].data, out, g, ch, {mo.mean, 1.0 / std::sqrt(mo.squares / count + eps)});
        if (c.attrs->act == Act::relu)  // relu's bits: it commutes with each dtype's rounding
          for (int64_t e = 0; e < g.count(); ++e) {
            float& y = out[g.index(ch, e)];
            y = y > 0.0f ? y : 0.0f;
          }
        c.out2.data[ch] = static_cast<float>(mo.mean);
        c.out2.data[g.c + ch] = static_cast<float>(mo.squares / (count - 1.0));
        break;
      }
      case OpKind::batch_norm_inference: {
        const float* stats = c.in[3].data;
        normalize(a, b, c.in[2].data, out, g, ch, {stats[ch], 1.0 / std::sqrt(static_cast<double>(stats[g.c + ch]) + eps)});
        break;
      }
      case OpKind::batch_norm_fold: {
        // a = w [K, ...] (channel ch: its inner elements), b = gamma; out2: the folded bias.
        const float* stats = c.in[3].data;
        const double sc = bn_fold_scale(b[ch], stats[g.c + ch], c.attrs->eps);
        for (int64_t e = 0; e < g.inner; ++e) out[ch * g.inner + e] = bn_fold_weight(a[ch * g.inner + e], sc);
        c.out2.data[ch] = bn_fold_bias(c.in[2].data[ch], stats[ch], sc);
        break;
      }
      case OpKind::batch_norm_stats_update: {
        // a = stats, written in place; b = x. The running variance takes the unbiased variance.
        const Moments mo = channel_moments(b, g, ch);
        const double m = c.attrs->momentum, var = mo.squares / static_cast<double>(g.count() - 1);
        float* stats = c.in[0].data;
        stats[ch] = bn_blend(stats[ch], static_cast<float>(mo.mean), m);
        stats[g.c + ch] = bn_blend(stats[g.c + ch], static_cast<float>(var), m);
        break;
      }
      case OpKind::batch_norm_grad_beta: {
        // a = dy: its sum over the channel, in double, rounded once.
        double sum = 0.0;
        for (int64_t e = 0; e < g.count(); ++e) sum += a[g.index(ch, e)];
        out[ch] = static_cast<float>(sum);
        break;
      }
      case OpKind::batch_norm_grad_x:
      case OpKind::batch_norm_grad_gamma:
      case OpKind::batch_norm_grad: {
        // a = dy, b = x. dgamma = sum dy xhat; dx = gamma rstd (dy - mean(dy) - xhat mean(dy xhat)).
        const ChannelStats st = channel_stats(b, g, ch, eps);
        double sum_dy = 0.0, sum_dy_xhat = 0.0;
        for (int64_t e = 0; e < g.count(); ++e) {
          const int64_t i = g.index(ch, e);
          sum_dy += a[i];
          sum_dy_xhat += a[i] * ((b[i] - st.mean) * st.rstd);
        }
        if (c.op == OpKind::batch_norm_grad_gamma) {
          out[ch] = static_cast<float>(sum_dy_xhat);
          break;
        }
        if (c.op == OpKind::batch_norm_grad) {
          // sum_dy adds dy in batch_norm_grad_beta's order: its bits.
          c.out2.data[ch] = static_cast<float>(sum_dy_xhat);
          c.out2.data[g.c + ch] = static_cast<float>(sum_dy);
        }
        const double inv = 1.0 / static_cast<double>(g.count()), gamma = c.in[2].data[ch];
        for (int64_t e = 0; e < g.count(); ++e) {
          const int64_t i = g.index(ch, e);
          const double xhat = (b[i] - st.mean) * st.rstd;
          out[i] = static_cast<float>(gamma * st.rstd * (a[i] - sum_dy * inv - xhat * sum_dy_xhat * inv));
        }
        break;
      }
      default: break;
    }
  }
}

}  // namespace tg::kernels
