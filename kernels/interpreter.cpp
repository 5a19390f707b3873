#include "kernels/interpreter.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "graph/attention.h"
#include "graph/errors.h"
#include "graph/float_formats.h"
#include "graph/validate.h"
#include "graph/init.h"
#include "kernels/cpu/cpu_kernels.h"

namespace tg {

namespace {

// For each input that a loss reads as data with a domain, the bound of that domain;
// 0 for the other values. cross_entropy(_grad) labels (input 1): the class count of
// the logits (cross_entropy_classes); embedding's ids (input 1): the table's rows
// (embedding_grad's: attrs.size); padded_mse_loss(_grad) counts (input 2): the element
// count of pred. A value read by two such nodes gets the smaller bound, so it is valid
// for both.
struct DataBounds {
  std::vector<int64_t> classes;  // labels in [0, classes)
  std::vector<int64_t> counts;   // a count in [1, counts]
};

DataBounds data_bounds(const Graph& g) {
  DataBounds b{std::vector<int64_t>(g.values.size(), 0), std::vector<int64_t>(g.values.size(), 0)};
  const int nv = static_cast<int>(g.values.size());
  auto in_range = [nv](int id) { return id >= 0 && id < nv; };
  auto lower = [](int64_t& bound, int64_t v) { bound = bound == 0 ? v : std::min(bound, v); };
  for (const Node& n : g.nodes) {
    const bool ids = n.op == OpKind::embedding || n.op == OpKind::embedding_grad;
    const bool labels = n.op == OpKind::cross_entropy || n.op == OpKind::cross_entropy_grad || ids;
    const bool count = n.op == OpKind::padded_mse_loss || n.op == OpKind::padded_mse_loss_grad;
    if (!labels && !count) continue;
    if (n.inputs.size() < (labels ? 2u : 3u)) continue;  // interpret() reports the malformed node
    const int data = n.inputs[0], read = n.inputs[labels ? 1 : 2];
    if (!in_range(data) || !in_range(read)) continue;
    const Shape& s = g.values[static_cast<size_t>(data)].shape;
    int64_t numel = 0;
    int64_t& classes = b.classes[static_cast<size_t>(read)];
    if (labels && !ids && (n.attrs.size >= 1 || s.rank == 2)) lower(classes, cross_entropy_classes(n.attrs, s[1]));
    else if (n.op == OpKind::embedding_grad && n.attrs.size >= 1) lower(classes, n.attrs.size);
    else if (ids && s.rank == 2) lower(classes, s[0]);
    if (count && numel_checked(s, numel) && numel > 0) lower(b.counts[static_cast<size_t>(read)], numel);
  }
  return b;
}

// Whole numbers in [1, n] stored as floats. Past 2^24 the float of k can round up
// past n; then the next float down is taken (a count must never exceed n).
void random_counts(std::vector<float>& out, uint64_t seed, int64_t n) {
  uint64_t state = seed;
  for (float& c : out) {
    c = static_cast<float>(1 + static_cast<int64_t>(splitmix64(state) % static_cast<uint64_t>(n)));
    if (static_cast<double>(c) > static_cast<double>(n)) c = std::nextafter(c, 0.0f);
  }
}

uint64_t value_seed(uint64_t seed, int id) {
  uint64_t state = seed ^ ((static_cast<uint64_t>(id) + 1) * 0xD1B54A32D192ED03ull);
  return splitmix64(state);
}

size_t checked_numel(const ValueInfo& v) {
  int64_t n = 0;
  if (!numel_checked(v.shape, n))
    graph_error("value {}: shape {} has a dim < 1 or too many elements; every dim must be >= 1", quote_name(v.name),
                v.shape.str());
  return static_cast<size_t>(n);
}

kernels::TensorView view(std::vector<std::vector<float>>& values, const Graph& g, int id, const Node& n) {
  if (id < 0 || id >= static_cast<int>(values.size()))
    graph_error("{} {}: refers to value id {}, but the graph has {} values", op_name(n.op), quote_name(n.name), id,
                values.size());
  return {values[static_cast<size_t>(id)].data(), g.values[static_cast<size_t>(id)].shape};
}

}  // namespace

std::vector<std::vector<float>> make_values(const Graph& g, uint64_t seed) {
  const DataBounds bounds = data_bounds(g);
  std::vector<std::vector<float>> values(g.values.size());
  for (size_t i = 0; i < g.values.size(); ++i) {
    const ValueInfo& v = g.values[i];
    const size_t n = checked_numel(v);
    const int id = static_cast<int>(i);
    if (v.role == Role::parameter || v.role == Role::optimizer_state) {
      values[i] = initial_values(v, seed);
    } else if (v.role == Role::input) {
      values[i].resize(n);
      const int64_t both = std::min(bounds.classes[i] - 1, bounds.counts[i]);  // read as labels and as a count
      if (bounds.classes[i] > 0 && bounds.counts[i] > 0 && both >= 1) {
        random_counts(values[i], value_seed(seed, id), both);
      } else if (bounds.classes[i] > 0) {
        random_labels(values[i], value_seed(seed, id), bounds.classes[i]);
      } else if (bounds.counts[i] > 0) {
        random_counts(values[i], value_seed(seed, id), bounds.counts[i]);
      } else {
        random_fill(values[i], value_seed(seed, id));
      }
    } else {
      values[i].assign(n, std::numeric_limits<float>::quiet_NaN());
    }
  }
  // A low-precision weight copy (the *_multi_cast updates) starts as its parameter, rounded
  // (interpret rounds the leaves), then zeros in the rows it has past the parameter's, as the
  // static executor's parameter store fills it.
  for (const Node& n : g.nodes) {
    if (!op_update_writes_copy(n.op)) continue;
    const int k = op_num_inputs(n.op);
    const int end = op_group_inputs(n.op, static_cast<int>(n.inputs.size()));
    for (int i = 0; i + k <= end; i += k) {
      const size_t copy = static_cast<size_t>(n.inputs[static_cast<size_t>(i + k - 1)]);
      const size_t size = values[copy].size();
      values[copy] = values[static_cast<size_t>(n.inputs[static_cast<size_t>(i)])];
      values[copy].resize(size, 0.0f);
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
      graph_error("interpret: value {} has shape {} ({} elements) but its vector holds {}", quote_name(g.values[i].name),
                  g.values[i].shape.str(), g.values[i].shape.numel(), values[i].size());
  // A bf16 or f16 value is kept as f32 holding what that dtype can represent: the leaves
  // rounded here, every output after its node. The kernels run in f32 on such values, which
  // is what the CPU backend does with 16-bit storage (kernels/cpu/widen.cpp), bit for bit.
  auto round_value = [&](int id) {
    const DType dt = g.values[static_cast<size_t>(id)].dtype;
    if (dt == DType::F32) return;
    for (float& x : values[static_cast<size_t>(id)]) x = round_to_dtype(x, dt);
  };
  for (size_t i = 0; i < values.size(); ++i)
    if (g.values[i].producer < 0) round_value(static_cast<int>(i));

  for (int node_id : g.topo_order()) {
    const Node& n = g.nodes[static_cast<size_t>(node_id)];
    const int arity = static_cast<int>(n.inputs.size());
    const int nout = op_num_outputs(n.op);
    if (!op_arity_ok(n.op, arity) || static_cast<int>(n.outputs.size()) != nout)
      graph_error("{} {}: has {} inputs and {} outputs; the op takes {} and {} output(s)", op_name(n.op),
                  quote_name(n.name), n.inputs.size(), n.outputs.size(), op_arity_text(n.op), nout);
    kernels::OpCall call;
    call.op = n.op;
    // Every view is f32 here: a cast (or a fused op that ends in one, layernorm_cast) computes in
    // f32 and is rounded after the node.
    const bool ends_in_cast = op_traits(n.op).dtype_rule == op_table::kTypeCast;
    Attrs widened;
    if (ends_in_cast) {
      widened = n.attrs;
      widened.to = DType::F32;
    }
    call.attrs = ends_in_cast ? &widened : &n.attrs;
    call.num_inputs = arity;
    std::vector<kernels::TensorView> more;  // a variadic op's inputs past kMaxOpInputs
    // The *_multi_cast updates store their copies in the copy's own 16 bits: held here, then
    // widened back into the copy's f32 vector.
    std::vector<std::vector<uint16_t>> copies(op_update_writes_copy(n.op) ? n.inputs.size() : 0);
    // A program computes in its values' own dtypes (graph/ew_program.h): its 16-bit inputs
    // and output go to it in their 16 bits, held here.
    const bool typed = op_traits(n.op).dtype_rule == op_table::kTypeProgram;
    std::vector<std::vector<uint16_t>> narrow;
    auto own_dtype = [&](kernels::TensorView v, int id) {
      const DType dt = g.values[static_cast<size_t>(id)].dtype;
      if (!typed || dt == DType::F32) return v;
      narrow.emplace_back(static_cast<size_t>(v.shape.numel()));
      store_as_dtype(v.data, narrow.back().size(), dt, narrow.back().data());
      return kernels::TensorView{reinterpret_cast<float*>(narrow.back().data()), v.shape, dt};
    };
    for (int i = 0; i < arity; ++i) {
      kernels::TensorView v = own_dtype(view(values, g, n.inputs[static_cast<size_t>(i)], n), n.inputs[static_cast<size_t>(i)]);
      if (op_input_is_copy(n.op, i, arity)) {
        copies[static_cast<size_t>(i)].assign(static_cast<size_t>(v.shape.numel()), 0);
        v = {reinterpret_cast<float*>(copies[static_cast<size_t>(i)].data()), v.shape,
             g.values[static_cast<size_t>(n.inputs[static_cast<size_t>(i)])].dtype};
      }
      if (i < kMaxOpInputs) call.in[static_cast<size_t>(i)] = v;
      else more.push_back(v);
    }
    call.more = more.data();
    if (nout >= 1) call.out = own_dtype(view(values, g, n.outputs[0], n), n.outputs[0]);
    if (nout == 2) call.out2 = view(values, g, n.outputs[1], n);
    try {
      kernels::run_cpu(call);
    } catch (const InputError& e) {
      rethrow_at_node(e, n.op, n.name);
    } catch (const std::invalid_argument& e) {
      graph_error("node {} ({}): {}", quote_name(n.name), op_name(n.op), e.what());
    }
    if (nout >= 1 && call.out.dtype != DType::F32)
      load_from_dtype(call.out.data, static_cast<size_t>(call.out.shape.numel()), call.out.dtype,
                      values[static_cast<size_t>(n.outputs[0])].data());
    // A 16-bit row statistic is stored as a pair hi + lo (graph/attention.h split_lse), as the
    // CPU backend's widened call splits it (kernels/cpu/widen.cpp); the f32 kernel leaves lo 0,
    // and rounding that pair alone would drop lo.
    const int lse = attention_lse_output(n.op);
    if (lse >= 0 && lse < nout) {
      const int id = n.outputs[static_cast<size_t>(lse)];
      const DType dt = g.values[static_cast<size_t>(id)].dtype;
      if (dt != DType::F32)
        kernels::cpu_attention_split_lse(values[static_cast<size_t>(id)].data(),
                                         static_cast<int64_t>(values[static_cast<size_t>(id)].size() / 2), dt);
    }
    for (int o : n.outputs) round_value(o);
    for (size_t i = 0; i < copies.size(); ++i)
      if (!copies[i].empty() && !(op_update_guarded(n.op, arity) && values[static_cast<size_t>(n.inputs.back())][0] != 0.0f))
        load_from_dtype(copies[i].data(), copies[i].size(), g.values[static_cast<size_t>(n.inputs[i])].dtype,
                        values[static_cast<size_t>(n.inputs[i])].data());
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
