#pragma once
// The layers the models of graph/models.h are written from (models.cpp, cnn_models.cpp):
// each a few builder calls with PyTorch's default initialization, named after its
// parameters ("<name>.w", "<name>.b", ...), so that both executors and every model that
// uses a layer give it the same values.
#include <cstdint>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "graph/models.h"

namespace tg::model_layers {

ParamInit constant(float v);

// Throws GraphError "<model>: <field> = <v> must be >= 1" when v < 1.
void require_positive(const char* model, const char* field, int64_t v);
// The image networks' checks, each throwing GraphError that names the field: batch, image,
// width and classes >= 1; `counts` (per stage, the config's field `field`, each one
// `each`) not empty, `fix` saying what to give, and each >= 1; the image a multiple of
// 2^halvings, `why` saying what halves it.
void require_image_sizes(const char* model, int64_t batch, int64_t image, int64_t width, int64_t classes);
void require_stages(const char* model, const std::vector<int>& counts, const char* field, const char* each,
                    const char* fix);
void require_halvable(const char* model, int64_t image, int64_t halvings, const std::string& why);

// Linear: x [.., in] · W [in, out] + b [out]; weights and bias uniform in ±1/sqrt(in), as
// PyTorch's nn.Linear.
Value linear(Builder& b, const Value& x, int64_t out, const std::string& name);

// Layer norm over x's last axis: "<name>.gamma" (ones) and "<name>.beta" (zeros), eps 1e-5.
Value layer_norm(Builder& b, const Value& x, const std::string& name);

// A k x k conv to `out` channels, padding k / 2; weights uniform in ±1/sqrt(fan_in),
// fan_in = C k k (as PyTorch's nn.Conv2d), with a bias of the same bound when `bias`.
Value conv(Builder& b, const Value& x, int64_t out, int k, int stride, bool bias, const std::string& name);

// Batch norm over x's channels with its running statistics "<name>.stats" [2, C] (means 0,
// variances 1 at the start). Training normalizes with the batch's statistics and moves the
// running ones toward them (momentum 0.1, as PyTorch's BatchNorm2d); inference reads the
// running ones.
Value batch_norm_layer(Builder& b, const Value& x, bool training, const std::string& name);

// batch_norm_layer, then a ReLU (in place when `in_place`).
Value bn_relu(Builder& b, const Value& x, bool training, bool in_place, const std::string& name);

// The end of a residual block: relu(z + shortcut), the shortcut x itself, or a 1x1 conv with
// `stride` + batch norm ("<name>.proj", "<name>.proj_bn") where x's shape differs from z's.
Value residual(Builder& b, const Value& x, const Value& z, int stride, bool training, bool in_place,
               const std::string& name);

// The Linear head on [N, features] and, with the loss, cross_entropy against "labels".
ModelOutputs classifier_head(Builder& b, const Value& features, int64_t classes, bool with_loss,
                             const std::string& name);

}  // namespace tg::model_layers
