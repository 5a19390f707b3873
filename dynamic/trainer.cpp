#include "dynamic/trainer.h"

#include <fmt/format.h>

#include <chrono>
#include <optional>
#include <stdexcept>

#include "graph/autodiff.h"
#include "graph/dropout.h"
#include "graph/errors.h"
#include "graph/optimizers.h"
#include "graph/training.h"
#include "trace/trace.h"

namespace tg {

namespace {
using Clock = std::chrono::steady_clock;
double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// One iteration of b around body(b), which returns what the iteration reads back; done(s)
// gets the iteration's seconds. When body throws, the iteration is aborted (its tensors
// freed, its partial trace kept from becoming the next iteration's plan).
template <typename Body, typename Done>
auto run_iteration(EagerBuilder& b, const Feeds& feeds, bool training, Body body, Done done) {
  const Clock::time_point t0 = Clock::now();
  TG_TRACE_SCOPE(training ? "dynamic training step" : "dynamic inference");
  b.begin_iteration(feeds, training);
  try {
    auto result = body(b);
    b.end_iteration();
    done(seconds(t0, Clock::now()));
    return result;
  } catch (...) {
    b.abort_iteration();
    throw;
  }
}
}  // namespace

DynamicOptions dynamic_options_like(const TrainOptions& t) {
  DynamicOptions o;
  o.lr = t.lr;
  o.momentum = t.momentum;
  o.use_momentum = t.use_momentum;
  o.adamw = t.adamw;
  o.adam = t.adam;
  o.clip_grad_norm = t.clip_grad_norm;
  o.loss_scale = t.loss_scale;
  o.data_parallel = t.data_parallel;
  return o;
}

DynamicTrainer::DynamicTrainer(ModelFn model, Backend& backend, const std::string& allocator, DynamicOptions opt)
    : model_(with_precision(std::move(model), opt.precision)), backend_(backend), opt_(opt),
      alloc_(make_allocator(allocator, backend)), loss_scaled_(loss_scale_enabled(opt.loss_scale, opt.precision)) {
  if (!model_) throw std::invalid_argument("DynamicTrainer: the model function is empty");
  EagerOptions eo;
  eo.record_tape = !opt_.inference;
  eo.free_early = opt_.free_early;
  eo.in_place_relu = opt_.in_place_relu;
  eo.timing = opt_.timing;
  eo.sample_period = opt_.sample_period;
  eo.seed = opt_.seed;
  builder_ = std::make_unique<EagerBuilder>(backend_, *alloc_, eo);
}

DynamicTrainer::~DynamicTrainer() {
  builder_.reset();  // returns every block before the allocator goes
}

float DynamicTrainer::step(const Feeds& feeds) {
  if (opt_.inference)
    throw std::logic_error("DynamicTrainer::step: this trainer was made with inference = true; use run_inference()");
  const auto body = [this](EagerBuilder& b) {
    const ModelOutputs out = model_(b);
    if (!out.loss.valid())
      graph_error("DynamicTrainer::step: the model returned no loss; build it with with_loss = true");
    b.mark_output(out.loss);
    if (out.prediction.valid()) b.mark_output(out.prediction);

    // Parameters in first-use order: the order build_training_graph sees them in (value id order).
    std::vector<Value> params;
    for (const EagerBuilder::Persistent& p : b.persistent())
      if (p.role == Role::parameter) params.push_back(b.handle(p.id));
    wrt_ = trained_parameters(params, b.tape());

    // Loss scaling's ops in build_training_graph's order, so the two executors run the same ones.
    LossScaling ls;
    const Value target = loss_scaled_ ? scale_loss(b, out.loss, opt_.loss_scale, ls) : out.loss;
    b.set_taping(false, Role::gradient);
    if (velocity_names_.size() != wrt_.size()) {
      param_names_.clear();
      velocity_names_.clear();
      for (const Value& w : wrt_) {
        param_names_.push_back(b.persistent()[static_cast<size_t>(w.id - EagerBuilder::kPersistentBase)].name);
        velocity_names_.push_back(param_names_.back() + ".velocity");
      }
    }
    // DDP: each bucket all-reduced as soon as backward has made its last gradient.
    std::optional<GradientReducer> reducer;
    GradientReady on_ready;
    if (opt_.data_parallel.enabled) {
      reducer.emplace(b, wrt_, param_names_, opt_.data_parallel);
      on_ready = [&reducer](size_t i, const Value& grad) { reducer->ready(i, grad); };
    }
    trace::Span autodiff("backward");  // the tape walked, gradient ops run as they are made
    std::vector<Value> grads = backward(b, b.tape(), target, wrt_, on_ready);
    autodiff.end();
    for (size_t i = 0; i < wrt_.size(); ++i)
      if (!grads[i].valid())
        graph_error("DynamicTrainer::step: parameter {} does not influence the loss; remove it or use it",
                    quote_name(param_names_[i]));
    if (reducer) grads = reducer->reduced();
    if (loss_scaled_) grads = unscale_gradients(b, grads, ls);
    const std::vector<Value> update_grads =
        opt_.clip_grad_norm > 0.0f ? clip_grad_norm(b, grads, param_names_, opt_.clip_grad_norm) : grads;
    Attrs at;
    at.lr = opt_.lr;
    at.momentum = opt_.momentum;
    for (size_t i = 0; i < wrt_.size(); ++i) {
      if (opt_.adamw) {
        adamw_update(b, wrt_[i], update_grads[i], param_names_[i], opt_.lr, opt_.adam, "",
                     loss_scaled_ ? ls.found : Value{});
        continue;
      }
      std::vector<Value> in = {wrt_[i], update_grads[i]};
      if (opt_.use_momentum) in.push_back(b.optimizer_state(wrt_[i], velocity_names_[i]));
      if (loss_scaled_) in.push_back(ls.found);
      b.apply(opt_.use_momentum ? OpKind::sgd_momentum : OpKind::sgd, in, at);
    }
    if (loss_scaled_) update_loss_scale(b, ls, opt_.loss_scale);
    // The next step's dropout masks, as build_training_graph ends the step.
    Value rng;
    for (const EagerBuilder::Persistent& p : b.persistent())
      if (p.name == kRngStateName && p.role == Role::optimizer_state) rng = b.handle(p.id);
    advance_rng(b, rng);
    return b.read(out.loss)[0];
  };
  return run_iteration(*builder_, feeds, /*training=*/true, body, [this](double s) { finish(s); });
}

std::vector<float> DynamicTrainer::run_inference(const Feeds& feeds) {
  std::vector<float> prediction;
  run_inference(feeds, prediction);
  return prediction;
}

void DynamicTrainer::run_inference(const Feeds& feeds, std::vector<float>& prediction) {
  const auto body = [this, &prediction](EagerBuilder& b) {
    const ModelOutputs out = model_(b);
    if (!out.prediction.valid()) graph_error("DynamicTrainer::run_inference: the model returned no prediction");
    b.mark_output(out.prediction);
    b.read_into(out.prediction, prediction);
    return 0;
  };
  run_iteration(*builder_, feeds, /*training=*/false, body, [this](double s) { finish(s); });
}

void DynamicTrainer::finish(double total_s) {
  const PhaseTimes t = builder_->phase_times();
  last_.total_s = total_s;
  last_.ops = t.ops;
  last_.timed_ops = t.timed_ops;
  last_.build_s = t.build_s;
  last_.alloc_s = t.alloc_s;
  last_.launch_s = t.launch_s;
  last_.other_s = opt_.timing == Timing::off ? 0.0 : total_s - (t.build_s + t.alloc_s + t.launch_s);
}

std::vector<std::string> DynamicTrainer::parameter_names() const {
  std::vector<std::string> names;
  for (const auto& p : builder_->persistent())
    if (p.role == Role::parameter) names.push_back(p.name);
  return names;
}

std::vector<std::string> DynamicTrainer::state_names() const {
  std::vector<std::string> names;
  for (const auto& p : builder_->persistent())
    if (p.role == Role::optimizer_state) names.push_back(p.name);
  return names;
}

std::vector<float> DynamicTrainer::parameter(const std::string& name) {
  for (const auto& p : builder_->persistent())
    if (p.name == name) return builder_->read(builder_->handle(p.id));
  throw std::invalid_argument(fmt::format("DynamicTrainer::parameter: no parameter or state named {}", quote_name(name)));
}

}  // namespace tg
