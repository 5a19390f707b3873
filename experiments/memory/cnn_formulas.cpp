// The convolutional models' formulas, layer by layer as the seed's walk-through counts
// them: a conv layer's parameters K C R S (+ K bias), its feature maps B K H W, which
// grow with the batch and the image and shrink at each pooling. f32 everywhere. Each
// term names the values it counts, in the order graph/models.cpp makes them and
// graph/autodiff.cpp differentiates them; reshapes are views and own no bytes.
#include "experiments/memory/formulas.h"

#include <algorithm>
#include <vector>

namespace tg::memory {

namespace {

constexpr int64_t kF32 = 4;

// Element counts per role, summed layer by layer.
// Running statistics are parameters the optimizer leaves alone: no gradient, no momentum.
struct Tally {
  int64_t params = 0, stats = 0, inputs = 0, activations = 0, workspace = 0;
  Predicted done(bool training, bool momentum) const {
    Predicted p;
    auto set = [&p](MemRole r, int64_t elements) { p.bytes[static_cast<size_t>(r)] = elements * kF32; };
    set(MemRole::parameters, params + stats);
    set(MemRole::inputs, inputs);
    set(MemRole::gradients, training ? params : 0);
    set(MemRole::momentum, training && momentum ? params : 0);
    set(MemRole::activations, activations);
    set(MemRole::workspace, workspace);
    return p;
  }
};

// Linear layers after the convolutions: in -> each width in `outs`; a ReLU after all but
// the last, whose bias_add output is the prediction (then the loss and its gradient).
void linear_layers(Tally& t, int64_t B, int64_t in, const std::vector<int64_t>& outs, bool training) {
  int64_t d = in;
  for (size_t l = 0; l < outs.size(); ++l) {
    const int64_t n = outs[l];
    const bool last = l + 1 == outs.size();
    t.params += d * n + n;
    // Forward: matmul, bias_add (the last: the prediction) and the ReLU; the ReLU's output is
    // saved (relu_grad and the next weight gradient read it).
    t.workspace += 2 * B * n;
    if (!last) (training ? t.activations : t.workspace) += B * n;
    if (!training) {
      d = n;
      continue;
    }
    // Backward: relu_grad, or the loss's gradient for the last; dA = dY W^T [B, d].
    t.workspace += B * n + B * d;
    d = n;
  }
  if (training) t.workspace += 2;  // the loss, and the seed of backward
}

}  // namespace

// VGG: per conv layer (C -> K channels at H x H, S = B K H H): conv2d, the bias broadcast
// [K,H], [K,H,H], [B,K,H,H] and add, the ReLU. Backward: relu_grad, the bias gradient's
// reduce_sums [K,H,H] and [K,H] (the [K] is the gradient), dX [B,C,H,H] but for the first
// layer (x is an input). Each pool: its output, and max_pool2d_grad's [B,K,2h,2h].
Predicted predict_vgg(const VggConfig& c, bool training, bool momentum) {
  const int64_t B = c.batch;
  Tally t;
  t.inputs = B * 3 * c.image * c.image + (training ? B : 0);  // x, labels
  int64_t C = 3, H = c.image;
  for (size_t s = 0; s < c.stages.size(); ++s) {
    const int64_t K = c.width << std::min<size_t>(s, 3);
    for (int k = 0; k < c.stages[s]; ++k) {
      const int64_t S = B * K * H * H;
      const bool first = s == 0 && k == 0;
      t.params += K * C * 9 + K;
      t.workspace += 3 * S + K * H + K * H * H;  // conv2d, the [B,K,H,H] broadcast, add; [K,H], [K,H,H]
      (training ? t.activations : t.workspace) += S;  // the ReLU's output
      if (training) t.workspace += S + K * H * H + K * H + (first ? 0 : B * C * H * H);
      C = K;
    }
    const int64_t pooled = B * C * (H / 2) * (H / 2);
    // A pool's output is saved when a conv follows (its weight gradient reads it); the last
    // one is read through the flattening reshape, a view it owns, by no backward op directly.
    const bool last = s + 1 == c.stages.size();
    (training && !last ? t.activations : t.workspace) += pooled;
    if (training) t.workspace += B * C * H * H;  // max_pool2d_grad
    H /= 2;
  }
  linear_layers(t, B, C * H * H, {c.fc, c.fc, c.classes}, training);
  return t.done(training, momentum);
}

namespace {

// ResNet: a conv + batch norm (+ ReLU) unit at K channels, output H x H (S = B K H H):
// conv2d (saved: batch norm's gradients read it) and batch norm's output; backward
// batch_norm_grad_x (gamma's and beta's [K] are gradients), and dX [B,C,H0,H0] of the conv
// but for the stem's. With a ReLU: its output
// (saved) and relu_grad. A block adds the residual add (its output and, backward, relu_grad
// after it) and one add joining the two gradients of its input [B,C,H0,H0].
struct ResNetTally {
  Tally t;
  int64_t B;
  bool training;

  void unit(int64_t C, int64_t K, int64_t k, int64_t H0, int64_t H, bool relu, bool stem) {
    const int64_t S = B * K * H * H;
    t.params += K * C * k * k + 2 * K;
    t.stats += 2 * K;  // the running statistics [2, K]: training updates them in place, inference reads them
    (training ? t.activations : t.workspace) += S;  // conv2d
    t.workspace += S;                                // batch norm
    if (!training) {
      if (relu) t.workspace += S;
      return;
    }
    t.workspace += S + (stem ? 0 : B * C * H0 * H0);
    if (relu) {
      t.activations += S;
      t.workspace += S;
    }
  }
  // The block's residual add and ReLU, K channels at Ho x Ho, its input C at H x H.
  void join(int64_t C, int64_t K, int64_t H, int64_t Ho) {
    const int64_t S = B * K * Ho * Ho;
    t.workspace += S;                               // the residual add
    (training ? t.activations : t.workspace) += S;  // the block's ReLU
    if (training) t.workspace += S + B * C * H * H;  // relu_grad; the join of the input's two gradients
  }
  // The global average pool: reduce_mean over W [B,C,H], then H [B,C] (the head reads it
  // through two reshapes); backward: scale and broadcast back through each. Then the head.
  Predicted head(int64_t C, int64_t H, int64_t classes, bool momentum) {
    t.workspace += B * C * H + B * C;
    if (training) t.workspace += B * C + 2 * B * C * H + B * C * H * H;
    linear_layers(t, B, C, {classes}, training);
    return t.done(training, momentum);
  }
};

}  // namespace

Predicted predict_resnet(const ResNetConfig& c, bool training, bool momentum) {
  ResNetTally r{{}, c.batch, training};
  r.t.inputs = c.batch * 3 * c.image * c.image + (training ? c.batch : 0);
  int64_t C = c.width, H = c.image;
  r.unit(3, C, 3, H, H, true, true);
  for (int s = 0; s < 3; ++s) {
    const int64_t K = c.width << s;
    for (int k = 0; k < c.blocks; ++k) {
      const bool down = s > 0 && k == 0;
      const int64_t Ho = down ? H / 2 : H;
      r.unit(C, K, 3, H, Ho, true, false);
      r.unit(K, K, 3, Ho, Ho, false, false);
      if (down) r.unit(C, K, 1, H, Ho, false, false);
      r.join(C, K, H, Ho);
      C = K;
      H = Ho;
    }
  }
  return r.head(C, H, c.classes, momentum);
}

// The ImageNet ResNet: the 7x7 stride-2 stem unit, then the 3x3 stride-2 max pool (its
// output saved: the first block reads it; backward max_pool2d_grad [B,W,H/2,H/2]), then the
// blocks: basic (3x3 with the stride + ReLU, 3x3) or bottleneck (1x1 + ReLU, 3x3 with the
// stride + ReLU, 1x1 to 4 w), a projection unit where the shape changes, and the join.
Predicted predict_resnet_imagenet(const ImageNetResNetConfig& c, bool training, bool momentum) {
  const int64_t B = c.batch;
  ResNetTally r{{}, B, training};
  r.t.inputs = B * 3 * c.image * c.image + (training ? B : 0);
  int64_t C = c.width, H = c.image / 2;
  r.unit(3, C, 7, c.image, H, true, true);
  H /= 2;
  (training ? r.t.activations : r.t.workspace) += B * C * H * H;  // the pool's output
  if (training) r.t.workspace += B * C * 4 * H * H;               // max_pool2d_grad
  for (size_t s = 0; s < c.blocks.size(); ++s) {
    const int64_t w = c.width << s, K = c.bottleneck ? 4 * w : w;
    for (int k = 0; k < c.blocks[s]; ++k) {
      const int64_t Ho = s > 0 && k == 0 ? H / 2 : H;
      if (c.bottleneck) {
        r.unit(C, w, 1, H, H, true, false);
        r.unit(w, w, 3, H, Ho, true, false);
        r.unit(w, K, 1, Ho, Ho, false, false);
      } else {
        r.unit(C, w, 3, H, Ho, true, false);
        r.unit(w, w, 3, Ho, Ho, false, false);
      }
      if (Ho != H || C != K) r.unit(C, K, 1, H, Ho, false, false);
      r.join(C, K, H, Ho);
      C = K;
      H = Ho;
    }
  }
  return r.head(C, H, c.classes, momentum);
}

}  // namespace tg::memory
