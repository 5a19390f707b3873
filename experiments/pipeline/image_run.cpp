#include "experiments/pipeline/image_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <vector>

#include "experiments/harness/exec_common.h"
#include "experiments/pipeline/gpu_pipeline.h"
#include "experiments/pipeline/image_device.h"
#include "graph/models.h"
#include "static/compiler.h"

namespace tg::pipeline {

namespace th = harness;

namespace {

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string shape_text(const ImageShape& s) { return fmt::format("{}x{}x{}x{}", s.n, s.h, s.w, s.c); }

// The training networks of tg-train's --models at batch s.n and image s.h, and their class count.
ModelFn image_model(const std::string& m, const ImageShape& s, int64_t& classes) {
  if (m == "resnet") {
    ResNetConfig r;
    r.batch = s.n;
    r.image = s.h;
    classes = r.classes;
    return [r](Builder& b) { return resnet_cifar(b, r); };
  }
  if (m == "vgg" || m == "vgg16") {
    VggConfig v = m == "vgg16" ? at_size(vgg16_config(), s.n, s.h) : VggConfig{};
    if (m == "vgg") {
      v.stages = {1, 1, 2, 2, 2};  // VGG-11, as tg-train's vgg
      v.batch = s.n;
      v.image = s.h;
    }
    classes = v.classes;
    return [v](Builder& b) { return vgg(b, v); };
  }
  const ImageNetResNetConfig r = at_size(m == "resnet18" ? resnet18_config() : resnet50_config(), s.n, s.h);
  classes = r.classes;
  return [r](Builder& b) { return resnet_imagenet(b, r); };
}

// A network's compiled training step, its input x written in place each batch.
struct Step {
  CompiledPlan plan;
  int x = -1;
};

Step compile_step(const std::string& m, const ImageShape& s, const std::shared_ptr<Backend>& be, bool gpu) {
  int64_t classes = 0;
  const ModelFn fn = image_model(m, s, classes);
  CompileOptions co;
  co.backend = be;
  co.training = true;
  co.use_cuda_graph = gpu;
  co.inputs_in_graph = false;  // the batch is written into x on the device, then the graph replays
  Step st{compile(fn, co), -1};
  for (int id : st.plan.graph->values_with_role(Role::input))
    if (st.plan.graph->values[static_cast<size_t>(id)].name == "x") st.x = id;
  if (st.x < 0) throw std::logic_error("tg-pipeline: the network has no input x");
  st.plan.run(bench::model_feeds(fn, 1, classes));  // the labels, once; x is overwritten per batch
  st.plan.exec->synchronize();
  return st;
}

// Every element of the device's normalized input against the CPU reference, bitwise.
void check_bits(const std::vector<float>& got, const std::vector<float>& ref, ImagePath p) {
  for (size_t i = 0; i < ref.size(); ++i)
    if (std::memcmp(&got[i], &ref[i], sizeof(float)) != 0)
      throw std::runtime_error(fmt::format("tg-pipeline: {} element {} is {:.9g} on the device, {:.9g} in the CPU "
                                           "reference (normalize_images): the two paths must agree bitwise",
                                           image_path_name(p), i, got[i], ref[i]));
}

struct Samples {
  std::vector<double> host, h2d, normalize, step, total;
};

}  // namespace

std::string image_model_problem(const std::string& model, const ImageShape& s) {
  if (s.h != s.w) return fmt::format("--models {}: the networks take square images; {}x{} is not", model, s.h, s.w);
  const int64_t multiple = model == "resnet" ? 4 : 32;
  if (s.h % multiple != 0)
    return fmt::format("--models {}: the image size must be a multiple of {} (its downsampling stages); {} is not: "
                       "pass --image-size {}",
                       model, multiple, s.h, std::max<int64_t>(multiple, s.h / multiple * multiple));
  return "";
}

void run_images(th::Experiment& e, const ImageRunOptions& o) {
  th::Report& r = e.report();
  const ImageShape& s = o.shape;
  const bool gpu = e.on_gpu();
  // What each way puts on the link, and what a link of o.link_gbps takes for it: the seed's
  // figure (8 bytes an element), float32's and uint8's.
  for (const CopyEstimate& c : copy_estimates(s, o.link_gbps)) {
    auto& m = r.add_value("image_batch_bytes", {{"batch", shape_text(s)}, {"dtype", c.what}},
                          static_cast<double>(c.bytes), "B");
    m.extra["bytes_per_element"] = c.bytes_per_element;
    m.extra["estimate_s"] = c.seconds;
    m.extra["link_GBps"] = o.link_gbps;
  }
  std::vector<std::vector<uint8_t>> pixels;
  for (int i = 0; i < o.batches; ++i) pixels.push_back(make_image_batch(s, 500 + static_cast<uint64_t>(i)));
  std::vector<float> ref(static_cast<size_t>(s.elems()));
  normalize_images(pixels[0].data(), ref.data(), s);

  std::optional<ImageDevice> dev;
  std::shared_ptr<Backend> be = make_backend(e.device(), e.cuda_options());
  if (gpu) {
    dev.emplace(s);
    // Both ways against the CPU reference, bit for bit, before anything is timed.
    std::vector<float> got(ref.size());
    for (ImagePath p : {ImagePath::u8, ImagePath::f32}) {
      std::fill(got.begin(), got.end(), std::nanf(""));
      dev->feed(p, pixels[0].data(), dev->own_input());
      dev->read(dev->own_input(), got.data(), s.elems());
      check_bits(got, ref, p);
    }
    r.add_value("check_image_normalize", {{"batch", shape_text(s)}}, static_cast<double>(s.elems()), "elements",
                "higher");
  } else {
    r.skip("image h2d", "no GPU: the CPU backend normalizes where the pixels are; nothing crosses a link");
  }

  std::vector<std::string> models(o.models.begin(), o.models.end());
  if (models.empty()) models.push_back("none");
  std::vector<uint8_t> staging(static_cast<size_t>(s.elems()));
  th::Progress bar(models.size() * 2 * static_cast<size_t>(o.passes), "tg-pipeline images");
  for (const std::string& model : models) {
    std::optional<Step> st;
    if (model != "none") st.emplace(compile_step(model, s, be, gpu));
    float* input = !st ? (gpu ? dev->own_input() : nullptr)
                       : gpu ? st->plan.exec->pointer(st->x)
                             : st->plan.exec->input_slot("x");
    std::vector<float> cpu_input;
    if (!input) {
      cpu_input.resize(ref.size());
      input = cpu_input.data();
    }
    for (ImagePath p : {ImagePath::u8, ImagePath::f32}) {
      Samples smp;
      for (int pass = -1; pass < o.passes; ++pass) {  // pass -1: warm-up, not recorded
        th::throw_if_interrupted();
        for (int i = 0; i < o.batches; ++i) {
          const uint8_t* px = pixels[static_cast<size_t>(i)].data();
          const auto t0 = std::chrono::steady_clock::now();
          ImageStageTimes t;
          if (gpu) {
            t = dev->feed(p, px, input);
          } else if (p == ImagePath::u8) {
            // The loader's uint8 batch handed over, then normalized where the network runs.
            std::memcpy(staging.data(), px, staging.size());
            t.host_s = since(t0);
            const auto t1 = std::chrono::steady_clock::now();
            normalize_images(staging.data(), input, s);
            t.normalize_s = since(t1);
          } else {
            normalize_images(px, input, s);
            t.host_s = since(t0);
          }
          double step_s = 0;
          if (st) {
            const auto t1 = std::chrono::steady_clock::now();
            if (gpu) {
              st->plan.exec->replay_resident();
              st->plan.exec->synchronize();
            } else {
              st->plan.run();
            }
            step_s = since(t1);
          }
          const double total = since(t0);
          if (pass < 0) continue;
          smp.host.push_back(t.host_s);
          smp.total.push_back(total);
          if (gpu) smp.h2d.push_back(t.h2d_s);
          if (p == ImagePath::u8) smp.normalize.push_back(t.normalize_s);
          if (st) smp.step.push_back(step_s);
        }
        if (pass >= 0) bar.tick(fmt::format("{} {}", model, image_path_name(p)));
      }
      if (st) {
        const float loss = st->plan.read(st->plan.loss)[0];
        if (!std::isfinite(loss))
          throw std::runtime_error(fmt::format("tg-pipeline: {} trained on {} batches to a non-finite loss", model,
                                               image_path_name(p)));
      }
      const th::Params base{{"batch", shape_text(s)}, {"model", model}, {"path", image_path_name(p)}};
      auto at = [&](const char* stage) {
        th::Params q = base;
        q.emplace("stage", stage);
        return q;
      };
      r.add_time("image_stage", at("host"), smp.host);
      if (!smp.h2d.empty()) {
        const int64_t bytes = s.elems() * (p == ImagePath::u8 ? 1 : 4);
        auto& m = r.add_time("image_stage", at("h2d"), smp.h2d, "gpu");
        m.extra["bytes"] = static_cast<double>(bytes);
        m.extra["GB/s"] = static_cast<double>(bytes) / th::summarize(smp.h2d).median / 1e9;
        m.extra["estimate_s"] = static_cast<double>(bytes) / (o.link_gbps * 1e9);
        m.extra["seed_estimate_s"] = static_cast<double>(s.elems() * 8) / (kSeedPcieGBps * 1e9);
      }
      if (!smp.normalize.empty()) r.add_time("image_stage", at("normalize"), smp.normalize, gpu ? "gpu" : "host");
      if (!smp.step.empty()) r.add_time("image_stage", at("step"), smp.step);
      r.add_time("image_stage", at("total"), smp.total);
    }
  }
  bench::report_conv_algorithms(r, *be);
}

}  // namespace tg::pipeline
