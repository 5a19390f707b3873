#include "graph/graph_model.h"

#include "graph/builder.h"
#include "graph/dropout.h"
#include "graph/errors.h"

namespace tg {

namespace {

// What `roots` depend on: per value and per node, whether it is needed.
struct Needed {
  std::vector<bool> value, node;
};

Needed needed_by(const Graph& g, const std::vector<int>& roots, const std::vector<int>& order) {
  Needed n{std::vector<bool>(g.values.size(), false), std::vector<bool>(g.nodes.size(), false)};
  for (int r : roots) n.value[static_cast<size_t>(r)] = true;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Node& node = g.nodes[static_cast<size_t>(*it)];
    bool used = false;
    for (int o : node.outputs) used = used || n.value[static_cast<size_t>(o)];
    if (!used) continue;
    n.node[static_cast<size_t>(*it)] = true;
    for (int in : node.inputs) n.value[static_cast<size_t>(in)] = true;
  }
  // A batch norm's running-statistics update has no output: it goes wherever the batch it
  // reads does, and brings its statistics (a parameter) along.
  for (size_t id = 0; id < g.nodes.size(); ++id) {
    const Node& node = g.nodes[id];
    if (node.op != OpKind::batch_norm_stats_update || !n.value[static_cast<size_t>(node.inputs[1])]) continue;
    n.node[id] = true;
    n.value[static_cast<size_t>(node.inputs[0])] = true;
  }
  return n;
}

// Per value, the running statistics that a batch_norm_stats_update node keeps of it (-1:
// none): in eval mode the batch norm of that value normalizes with them instead.
std::vector<int> running_stats_of(const Graph& g) {
  std::vector<int> stats(g.values.size(), -1);
  for (const Node& n : g.nodes)
    if (n.op == OpKind::batch_norm_stats_update) stats[static_cast<size_t>(n.inputs[1])] = n.inputs[0];
  return stats;
}

// Dropout's rng state (graph/dropout.h), the one optimizer state a forward graph may hold: the
// trainers advance it.
bool is_rng_state(const ValueInfo& v) {
  return v.name == kRngStateName && v.dtype == DType::I64 && v.shape == Shape{2} && v.producer < 0;
}

// Declares the needed leaves (in id order) and applies the needed nodes (in
// topological order) on b; returns the builder's handle per value id.
std::vector<Value> replay(const Graph& g, const std::vector<int>& order, const Needed& need, Builder& b) {
  std::vector<Value> h(g.values.size());
  for (size_t id = 0; id < g.values.size(); ++id) {
    const ValueInfo& v = g.values[id];
    if (!need.value[id] || v.producer >= 0) continue;
    if (v.role == Role::input) h[id] = b.input(v.name, v.shape, v.dtype);
    else if (v.role == Role::parameter) h[id] = b.parameter(v.name, v.shape, v.init, v.dtype);
    else if (is_rng_state(v)) h[id] = rng_state(b);
    else graph_error("value '{}' has no producer and role {}; a forward graph's leaves are inputs and parameters",
                     v.name, role_name(v.role));
  }
  const std::vector<int> stats = running_stats_of(g);
  for (int nid : order) {
    if (!need.node[static_cast<size_t>(nid)]) continue;
    const Node& n = g.nodes[static_cast<size_t>(nid)];
    std::vector<Value> ins;
    for (int in : n.inputs) ins.push_back(h[static_cast<size_t>(in)]);
    // Eval mode (inference), as graph/dropout.h and graph/model_layers.h build it: dropout is
    // the identity, batch norm normalizes with its running statistics and updates nothing.
    Value out;
    if (b.eval() && n.op == OpKind::dropout) {
      out = ins[0];
    } else if (b.eval() && n.op == OpKind::batch_norm_stats_update) {
      continue;
    } else if (b.eval() && n.op == OpKind::batch_norm && stats[static_cast<size_t>(n.inputs[0])] >= 0) {
      ins.push_back(h[static_cast<size_t>(stats[static_cast<size_t>(n.inputs[0])])]);
      out = b.apply(OpKind::batch_norm_inference, ins, n.attrs, n.name);
    } else {
      out = b.apply(n.op, ins, n.attrs, n.name);
    }
    if (!n.outputs.empty()) h[static_cast<size_t>(n.outputs[0])] = out;
  }
  return h;
}

void check_forward(const Graph& g) {
  if (g.outputs.empty())
    graph_error("the graph has no outputs; list the prediction (and the loss, to train) under \"outputs\"");
  for (const Node& n : g.nodes)
    if (op_is_update(n.op) && n.op != OpKind::batch_norm_stats_update)
      graph_error("node '{}' ({}) updates a parameter: the graph is a training step written out by hand. Give the "
                  "forward graph with its loss as an output instead: both executors differentiate it themselves",
                  n.name, op_name(n.op));
  for (const ValueInfo& v : g.values)
    if (v.role == Role::optimizer_state && !is_rng_state(v))
      graph_error("value '{}' is optimizer state: the graph is a training step written out by hand. Give the "
                  "forward graph with its loss as an output instead", v.name);
}

}  // namespace

bool op_is_loss(OpKind op) {
  return op == OpKind::mse_loss || op == OpKind::cross_entropy || op == OpKind::padded_mse_loss;
}

GraphModel graph_model(Graph graph) {
  check_forward(graph);
  const std::vector<int> order = graph.topo_order();
  int loss = -1, prediction = -1;
  std::vector<int> others;
  for (int o : graph.outputs) {
    const ValueInfo& v = graph.values[static_cast<size_t>(o)];
    const bool is_loss = v.producer >= 0 && op_is_loss(graph.nodes[static_cast<size_t>(v.producer)].op);
    if (is_loss && loss >= 0)
      graph_error("outputs '{}' and '{}' are both losses; a model trains on one loss: list only it",
                  graph.values[static_cast<size_t>(loss)].name, v.name);
    if (is_loss) loss = o;
    else if (prediction < 0) prediction = o;
    else others.push_back(o);
  }
  if (prediction < 0) prediction = graph.nodes[static_cast<size_t>(graph.values[static_cast<size_t>(loss)].producer)].inputs[0];

  GraphModel m;
  m.prediction = graph.values[static_cast<size_t>(prediction)].name;
  if (loss >= 0) m.loss = graph.values[static_cast<size_t>(loss)].name;
  for (int o : others) m.other_outputs.push_back(graph.values[static_cast<size_t>(o)].name);
  for (const Node& n : graph.nodes)
    if (n.op == OpKind::cross_entropy)
      m.classes = cross_entropy_classes(n.attrs, graph.values[static_cast<size_t>(n.inputs[0])].shape.last());

  auto g = std::make_shared<const Graph>(std::move(graph));
  m.graph = g;
  std::vector<int> all_roots = g->outputs;
  all_roots.push_back(prediction);
  const Needed all = needed_by(*g, all_roots, order);
  const Needed infer = needed_by(*g, {prediction}, order);
  m.fn = [g, order, all, prediction, loss, others](Builder& b) {
    const std::vector<Value> h = replay(*g, order, all, b);
    for (int o : others) b.mark_output(h[static_cast<size_t>(o)]);
    ModelOutputs out;
    out.prediction = h[static_cast<size_t>(prediction)];
    if (loss >= 0) out.loss = h[static_cast<size_t>(loss)];
    return out;
  };
  m.infer_fn = [g, order, infer, prediction](Builder& b) {
    ModelOutputs out;
    out.prediction = replay(*g, order, infer, b)[static_cast<size_t>(prediction)];
    return out;
  };
  return m;
}

int64_t graph_batch(const Graph& g) {
  for (const ValueInfo& v : g.values)
    if (v.role == Role::input && v.producer < 0) return v.shape[0];
  return 0;
}

Graph rebatch(const Graph& g, int64_t batch) {
  if (batch < 1) graph_error("batch {} must be >= 1", batch);
  const int64_t b0 = graph_batch(g);
  if (b0 == 0) graph_error("the graph has no inputs, so it has no batch to change");
  Graph patched = g;
  for (ValueInfo& v : patched.values)
    if (v.role == Role::input && v.producer < 0 && v.shape[0] == b0) v.shape[0] = batch;
  for (Node& n : patched.nodes) {
    if (n.op != OpKind::reshape) continue;
    bool inferred = false;
    for (int i = 0; i < n.attrs.shape.rank; ++i) inferred = inferred || n.attrs.shape[i] == -1;
    if (!inferred && n.attrs.shape.rank > 0) n.attrs.shape[0] = -1;
  }
  return prune_to_outputs(patched);
}

Graph prune_to_outputs(const Graph& g) {
  const std::vector<int> order = g.topo_order();
  const Needed need = needed_by(g, g.outputs, order);
  Graph out;
  RecordingBuilder rb(out);
  const std::vector<Value> h = replay(g, order, need, rb);
  for (int o : g.outputs) rb.mark_output(h[static_cast<size_t>(o)]);
  return out;
}

}  // namespace tg
