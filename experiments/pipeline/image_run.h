#pragma once
// tg-pipeline --images: the seed's image batch into a CNN's training step, the uint8 pixels
// normalized on the GPU against f32 normalized on the host (image_batch.h, image_device.h),
// with the bytes each copies beside the estimate of a stated link.
#include <set>
#include <string>

#include "experiments/harness/harness.h"
#include "experiments/pipeline/image_batch.h"

namespace tg::pipeline {

struct ImageRunOptions {
  ImageShape shape;
  std::set<std::string> models;  // bench::parse_models_flag's names; empty: the input path alone
  int batches = 4;               // distinct batches, cycled
  int passes = 3;                // timed passes over them per path and model
  double link_gbps = kSeedPcieGBps;
};

// The network's input is x [N, 3, H, W] (graph/models.h): which of tg-train's --models can
// read an image of this shape; "" when it can, else why not (a UsageError's text).
std::string image_model_problem(const std::string& model, const ImageShape& s);

void run_images(harness::Experiment& e, const ImageRunOptions& o);

}  // namespace tg::pipeline
