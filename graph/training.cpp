#include "graph/training.h"

#include <optional>
#include <unordered_set>

#include "graph/dropout.h"
#include "graph/errors.h"
#include "graph/optimizers.h"

namespace tg {

namespace {

// A copy of g holding only what `keep` depends on, ids renumbered in their
// original order (so names, roles and initial values are unchanged).
Graph prune_to(const Graph& g, int keep) {
  std::vector<bool> need_value(g.values.size(), false), need_node(g.nodes.size(), false);
  need_value[static_cast<size_t>(keep)] = true;
  // Recorded nodes only read values that exist before them: one reverse sweep.
  for (size_t n = g.nodes.size(); n-- > 0;) {
    const Node& node = g.nodes[n];
    bool used = false;
    for (int o : node.outputs) used = used || need_value[static_cast<size_t>(o)];
    if (!used) continue;
    need_node[n] = true;
    for (int in : node.inputs) need_value[static_cast<size_t>(in)] = true;
  }
  Graph out;
  std::vector<int> remap(g.values.size(), -1);
  for (size_t v = 0; v < g.values.size(); ++v) {
    if (!need_value[v]) continue;
    ValueInfo info = g.values[v];
    info.producer = -1;
    remap[v] = out.add_value(info);
  }
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (!need_node[n]) continue;
    Node node = g.nodes[n];
    for (int& in : node.inputs) in = remap[static_cast<size_t>(in)];
    for (int& o : node.outputs) o = remap[static_cast<size_t>(o)];
    out.add_node(std::move(node));
  }
  RecordingBuilder(out).mark_output(RecordingBuilder::handle(out, remap[static_cast<size_t>(keep)]));
  return out;
}

}  // namespace

const char* optimizer_name(const TrainOptions& o) { return o.adamw ? "adamw" : o.use_momentum ? "momentum" : "sgd"; }

bool parse_optimizer(const std::string& name, TrainOptions& o) {
  if (name != "sgd" && name != "momentum" && name != "adamw") return false;
  o.adamw = name == "adamw";
  o.use_momentum = name == "momentum";
  return true;
}

std::vector<int> parameter_ids(const Graph& g) { return g.values_with_role(Role::parameter); }

std::vector<Value> trained_parameters(const std::vector<Value>& params, const std::vector<TapeEntry>& tape) {
  std::unordered_set<int> written;
  for (const TapeEntry& e : tape)
    for (size_t i = 0; i < e.inputs.size(); ++i)
      if (op_update_writes(e.op, static_cast<int>(i), static_cast<int>(e.inputs.size())))
        written.insert(e.inputs[i].id);
  std::vector<Value> out;
  for (const Value& p : params)
    if (!written.count(p.id)) out.push_back(p);
  return out;
}

Graph build_inference_graph(const ModelFn& model) {
  Graph g;
  RecordingBuilder b(g);
  b.set_eval(true);  // dropout is the identity
  const ModelOutputs out = model(b);
  if (!out.prediction.valid())
    graph_error("build_inference_graph: the model returned no prediction; return the value to read back "
                "in ModelOutputs::prediction");
  return prune_to(g, out.prediction.id);
}

Graph build_training_graph(const ModelFn& model, const TrainOptions& opt) {
  Graph g;
  RecordingBuilder b(g);
  const ModelOutputs out = model(b);
  if (!out.loss.valid())
    graph_error("build_training_graph: the model returned no loss; build it with its loss enabled "
                "(with_loss = true) and return it in ModelOutputs::loss");
  const size_t fwd_nodes = g.nodes.size();
  const int fwd_values = static_cast<int>(g.values.size());

  std::vector<Value> all;
  for (int id : parameter_ids(g)) all.push_back(RecordingBuilder::handle(g, id));
  const std::vector<Value> params = trained_parameters(all, tape_from_graph(g));
  if (params.empty())
    graph_error("build_training_graph: the model has no parameters; create them with Builder::parameter");

  const bool scaled = opt.loss_scale.enabled.value_or(false);
  LossScaling ls;
  const Value target = scaled ? scale_loss(b, out.loss, opt.loss_scale, ls) : out.loss;
  b.set_default_role(Role::temporary);
  std::vector<std::string> names;
  for (const Value& p : params) names.push_back(g.values[static_cast<size_t>(p.id)].name);
  std::optional<GradientReducer> reducer;
  GradientReady on_ready;
  if (opt.data_parallel.enabled) {
    reducer.emplace(b, params, names, opt.data_parallel);
    on_ready = [&reducer](size_t i, const Value& grad) { reducer->ready(i, grad); };
  }
  std::vector<Value> grads = backward(b, tape_from_graph(g), target, params, on_ready);
  for (size_t i = 0; i < params.size(); ++i) {
    if (!grads[i].valid())
      graph_error("build_training_graph: parameter {} does not influence the loss, so it has no gradient; "
                  "use it in the forward pass or do not create it", quote_name(names[i]));
    if (grads[i].id >= fwd_values) g.values[static_cast<size_t>(grads[i].id)].role = Role::gradient;
  }
  if (reducer) {
    grads = reducer->reduced();
    for (const Value& r : grads) g.values[static_cast<size_t>(r.id)].role = Role::gradient;
  }
  if (scaled) {
    grads = unscale_gradients(b, grads, ls);
    for (const Value& u : grads) g.values[static_cast<size_t>(u.id)].role = Role::gradient;
  }

  std::vector<Value> update_grads = grads;
  if (opt.clip_grad_norm > 0.0f) {
    update_grads = clip_grad_norm(b, grads, names, opt.clip_grad_norm);
    for (const Value& c : update_grads) g.values[static_cast<size_t>(c.id)].role = Role::gradient;
  }

  Attrs at;
  at.lr = opt.lr;
  at.momentum = opt.momentum;
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string name = g.values[static_cast<size_t>(params[i].id)].name;
    const Value& grad = update_grads[i];
    if (opt.adamw) {
      adamw_update(b, params[i], grad, name, opt.lr, opt.adam, name + ".update", scaled ? ls.found : Value{});
      continue;
    }
    std::vector<Value> in = {params[i], grad};
    if (opt.use_momentum) in.push_back(b.optimizer_state(params[i], name + ".velocity"));
    if (scaled) in.push_back(ls.found);
    b.apply(opt.use_momentum ? OpKind::sgd_momentum : OpKind::sgd, in, at, name + ".update");
  }
  if (scaled) update_loss_scale(b, ls, opt.loss_scale);
  // The next step's dropout masks: after every reader of the rng state, as the updates are.
  const int rng = g.find_value(kRngStateName);
  if (rng >= 0 && g.values[static_cast<size_t>(rng)].role == Role::optimizer_state)
    advance_rng(b, RecordingBuilder::handle(g, rng));

  for (size_t n = fwd_nodes; n < g.nodes.size(); ++n)
    for (int in : g.nodes[n].inputs)
      if (in < fwd_values && g.values[static_cast<size_t>(in)].role == Role::temporary)
        g.values[static_cast<size_t>(in)].role = Role::activation;

  b.mark_output(out.loss);
  if (out.prediction.valid() && out.prediction.id != out.loss.id) b.mark_output(out.prediction);
  return g;
}

}  // namespace tg
