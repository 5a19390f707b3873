#include "kernels/interpreter.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "graph/errors.h"
#include "graph/init.h"
#include "kernels/cpu/cpu_kernels.h"

namespace tg {

namespace {

// Class counts of the inputs that some cross_entropy node reads as labels; 0 for
// the other values. A value read as labels by two nodes gets the smaller count,
// so that its labels are valid for both.
std::vector<int64_t> label_classes(const Graph& g) {
  std::vector<int64_t> classes(g.values.size(), 0);
  for (const Node& n : g.nodes) {
    if (n.op != OpKind::cross_entropy && n.op != OpKind::cross_entropy_grad) continue;
    if (n.inputs.size() < 2) continue;  // interpret() reports the malformed node
    const int logits = n.inputs[0], labels = n.inputs[1];
    if (logits < 0 || labels < 0 || logits >= static_cast<int>(g.values.size()) ||
        labels >= static_cast<int>(g.values.size()))
      continue;
    const Shape& s = g.values[static_cast<size_t>(logits)].shape;
    if (s.rank != 2) continue;
    int64_t& c = classes[static_cast<size_t>(labels)];
    c = c == 0 ? s[1] : std::min(c, s[1]);
  }
  return classes;
}

uint64_t value_seed(uint64_t seed, int id) {
  uint64_t state = seed ^ ((static_cast<uint64_t>(id) + 1) * 0xD1B54A32D192ED03ull);
  return splitmix64(state);
}

size_t checked_numel(const ValueInfo& v) {
  int64_t n = 0;
  if (!numel_checked(v.shape, n))
    graph_error("value {}: shape {} has a dim < 1 or too many elements; every dim must be >= 1", v.name,
                v.shape.str());
  return static_cast<size_t>(n);
}

kernels::TensorView view(std::vector<std::vector<float>>& values, const Graph& g, int id, const Node& n) {
  if (id < 0 || id >= static_cast<int>(values.size()))
    graph_error("{} {}: refers to value id {}, but the graph has {} values", op_name(n.op), n.name, id,
                values.size());
  return {values[static_cast<size_t>(id)].data(), g.values[static_cast<size_t>(id)].shape};
}

}  // namespace

std::vector<std::vector<float>> make_values(const Graph& g, uint64_t seed) {
  const std::vector<int64_t> classes = label_classes(g);
  std::vector<std::vector<float>> values(g.values.size());
  for (size_t i = 0; i < g.values.size(); ++i) {
    const ValueInfo& v = g.values[i];
    const size_t n = checked_numel(v);
    const int id = static_cast<int>(i);
    if (v.role == Role::parameter || v.role == Role::optimizer_state) {
      values[i] = initial_values(v, seed);
    } else if (v.role == Role::input) {
      values[i].resize(n);
      if (classes[i] > 0)
        random_labels(values[i], value_seed(seed, id), classes[i]);
      else
        random_fill(values[i], value_seed(seed, id));
    } else {
      values[i].assign(n, std::numeric_limits<float>::quiet_NaN());
    }
  }
  return values;
}

void interpret(const Graph& g, std::vector<std::vector<float>>& values) {
  if (values.size() != g.values.size())
    graph_error("interpret: got {} value vectors for a graph of {} values; build them with make_values(graph, seed)",
                values.size(), g.values.size());
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].size() != checked_numel(g.values[i]))
      graph_error("interpret: value {} has shape {} ({} elements) but its vector holds {}", g.values[i].name,
                  g.values[i].shape.str(), g.values[i].shape.numel(), values[i].size());

  for (int node_id : g.topo_order()) {
    const Node& n = g.nodes[static_cast<size_t>(node_id)];
    const int arity = static_cast<int>(n.inputs.size());
    const int nout = op_num_outputs(n.op);
    if (!op_arity_ok(n.op, arity) || static_cast<int>(n.outputs.size()) != nout)
      graph_error("{} {}: has {} inputs and {} outputs; the op takes {} and {} output(s)", op_name(n.op), n.name,
                  n.inputs.size(), n.outputs.size(), op_arity_text(n.op), nout);
    kernels::OpCall call;
    call.op = n.op;
    call.attrs = &n.attrs;
    call.num_inputs = arity;
    std::vector<kernels::TensorView> more;  // a variadic op's inputs past kMaxOpInputs
    for (int i = 0; i < arity; ++i) {
      const kernels::TensorView v = view(values, g, n.inputs[static_cast<size_t>(i)], n);
      if (i < kMaxOpInputs) call.in[static_cast<size_t>(i)] = v;
      else more.push_back(v);
    }
    call.more = more.data();
    if (nout >= 1) call.out = view(values, g, n.outputs[0], n);
    if (nout == 2) call.out2 = view(values, g, n.outputs[1], n);
    try {
      kernels::run_cpu(call);
    } catch (const std::invalid_argument& e) {
      graph_error("node {} ({}): {}", n.name, op_name(n.op), e.what());
    }
  }
}

uint64_t checksum(const std::vector<float>& v) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a, 64 bit, over the bytes of each float
  for (float x : v) {
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    for (int b = 0; b < 4; ++b) h = (h ^ ((bits >> (8 * b)) & 0xFFu)) * 1099511628211ull;
  }
  return h;
}

double sum(const std::vector<float>& v) {
  double s = 0.0;
  for (float x : v) s += x;
  return s;
}

}  // namespace tg
