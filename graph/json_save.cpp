// Writing graph files (docs/graph-format.md): every attribute an op reads, the
// shortest decimals that read back to the same floats. Reading them is graph/json_load.cpp.
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "graph/conv.h"
#include "graph/errors.h"
#include "graph/json_io.h"

namespace tg {

namespace {

using ojson = nlohmann::ordered_json;

unsigned op_attrs(OpKind op) { return op_traits(op).attrs; }

const char* init_kind_name(ParamInit::Kind k) {
  return k == ParamInit::Kind::uniform         ? "uniform"
         : k == ParamInit::Kind::seed          ? "seed"
         : k == ParamInit::Kind::running_stats ? "running_stats"
                                               : "constant";
}

// The shortest decimal that reads back as the same float, so files stay readable
// ("0.01", not "0.009999999776482582") and round-trip exactly.
// Read back through a double, the short form could in principle round to a
// neighbouring float; then write the float's exact value instead.
double float_json(float f) {
  const double d = std::strtod(fmt::format("{}", f).c_str(), nullptr);
  return static_cast<float>(d) == f ? d : static_cast<double>(f);
}

ojson dims_json(const Shape& s, int rank) {
  ojson a = ojson::array();
  for (int d = 0; d < rank; ++d) a.push_back(s.dims[static_cast<size_t>(d)]);
  return a;
}

// A fused_elementwise program, one instruction per array: ["mul", 0, 1], ["relu", 2],
// ["scale", 3, 0.5], ["cast", 4, "bf16"] (op, operands, and scale's alpha or cast's dtype).
ojson program_json(const EwProgram& p) {
  ojson code = ojson::array();
  for (const EwInstr& in : p.code) {
    ojson i = ojson::array({ew_op_name(in.op), in.a});
    if (ew_op_binary(in.op)) i.push_back(in.b);
    if (in.op == EwOp::scale) i.push_back(float_json(in.alpha));
    if (in.op == EwOp::cast) i.push_back(dtype_name(in.to));
    code.push_back(i);
  }
  return code;
}

// Every field, so that a file says the whole window; conv2d's comes from its weight, so
// conv2d and its backward ops have no kernel key.
ojson conv_json(const ConvAttr& c, OpKind op) {
  ojson j = ojson::object();
  if (!conv_window_from_weight(op)) j["kernel"] = ojson::array({c.kernel[0], c.kernel[1]});
  j["stride"] = ojson::array({c.stride[0], c.stride[1]});
  j["pads"] = ojson::array({c.pads[0], c.pads[1], c.pads[2], c.pads[3]});
  j["dilation"] = ojson::array({c.dilation[0], c.dilation[1]});
  j["groups"] = c.groups;
  j["ceil_mode"] = c.ceil_mode;
  if (op == OpKind::conv_transpose2d) j["output_padding"] = ojson::array({c.output_padding[0], c.output_padding[1]});
  if (c.channels_last) j["channels_last"] = true;  // NCHW, the default, is left out
  return j;
}

ojson attrs_to_json(const Node& n, int input_rank) {
  const Attrs& at = n.attrs;
  const Attrs def;
  const unsigned m = op_attrs(n.op);
  ojson j = ojson::object();
  for (int i = 0; i < kNumAttrs; ++i) {
    const AttrId a = static_cast<AttrId>(i);
    if (!(m & attr_bit(a))) continue;
    const char* key = attr_name(a);
    switch (a) {
      case AttrId::trans_a: if (at.trans_a) j[key] = true; break;
      case AttrId::trans_b: if (at.trans_b) j[key] = true; break;
      case AttrId::axis: if (at.axis != def.axis || n.op != OpKind::softmax) j[key] = at.axis; break;
      case AttrId::size: j[key] = at.size; break;
      case AttrId::eps: if (at.eps != def.eps) j[key] = float_json(at.eps); break;
      case AttrId::alpha:
        if (at.alpha != def.alpha || n.op == OpKind::scale) j[key] = float_json(at.alpha);
        break;
      case AttrId::value: j[key] = float_json(at.value); break;
      case AttrId::lr: j[key] = float_json(at.lr); break;
      case AttrId::momentum: j[key] = float_json(at.momentum); break;
      case AttrId::in_place: if (at.in_place) j[key] = true; break;
      case AttrId::shape: j[key] = dims_json(at.shape, at.shape.rank); break;
      case AttrId::perm: {
        ojson p = ojson::array();
        for (int d = 0; d < (input_rank > 0 ? input_rank : kMaxRank); ++d) p.push_back(at.perm[static_cast<size_t>(d)]);
        j[key] = p;
        break;
      }
      case AttrId::act:
        if (at.act != Act::none) j[key] = act_name(at.act);
        break;
      case AttrId::program: j[key] = program_json(at.program); break;
      case AttrId::to: j[key] = dtype_name(at.to); break;
      case AttrId::conv: j[key] = conv_json(at.conv, n.op); break;
      case AttrId::start: j[key] = at.start; break;
      case AttrId::growth_factor: j[key] = at.growth_factor; break;
      case AttrId::backoff_factor: j[key] = at.backoff_factor; break;
      case AttrId::growth_interval: j[key] = at.growth_interval; break;
      case AttrId::adam:
        j[key] = ojson{{"beta1", float_json(at.adam.beta1)}, {"beta2", float_json(at.adam.beta2)},
                       {"eps", float_json(at.adam.eps)}, {"weight_decay", float_json(at.adam.weight_decay)}};
        break;
      case AttrId::max_norm: j[key] = float_json(at.max_norm); break;
      case AttrId::causal: if (at.causal) j[key] = true; break;
      case AttrId::ignore_index: if (at.ignore_index != def.ignore_index) j[key] = at.ignore_index; break;
      case AttrId::p: j[key] = float_json(at.p); break;
      case AttrId::rng_stream: j[key] = at.rng_stream; break;
      case AttrId::channels_last: if (at.channels_last) j[key] = true; break;
      case AttrId::heads:
        j[key] = ojson{{"count", at.heads.count}, {"a", at.heads.a}, {"b", at.heads.b}, {"out", at.heads.out}};
        break;
    }
  }
  return j;
}

}  // namespace

std::string node_attrs_json(const Graph& g, const Node& n) {
  int rank = 0;
  if (!n.inputs.empty() && n.inputs[0] >= 0 && n.inputs[0] < static_cast<int>(g.values.size()))
    rank = g.values[static_cast<size_t>(n.inputs[0])].shape.rank;
  const ojson j = attrs_to_json(n, rank);
  return j.empty() ? std::string() : j.dump();
}

std::string save_graph_json(const Graph& g) {
  const int nv = static_cast<int>(g.values.size());
  auto value_at = [&](int id, const std::string& what) -> const ValueInfo& {
    if (id < 0 || id >= nv) graph_error("save_graph_json: {} refers to value id {}, but the graph has {} values", what, id, nv);
    return g.values[static_cast<size_t>(id)];
  };
  std::vector<bool> is_output(g.values.size(), false);
  for (int o : g.outputs) {
    value_at(o, "a graph output");
    is_output[static_cast<size_t>(o)] = true;
  }

  ojson sections[3] = {ojson::array(), ojson::array(), ojson::array()};
  std::vector<int> canonical[3];
  for (int id = 0; id < nv; ++id) {
    const ValueInfo& v = g.values[static_cast<size_t>(id)];
    if (v.producer >= 0) continue;
    int s = v.role == Role::input ? 0 : v.role == Role::parameter ? 1 : v.role == Role::optimizer_state ? 2 : -1;
    if (s < 0)
      graph_error("save_graph_json: value {} has no producer and role {}; a file can only declare inputs, "
                  "parameters and optimizer_state as leaves", quote_name(v.name), role_name(v.role));
    ojson e;
    e["name"] = v.name;
    e["shape"] = dims_json(v.shape, v.shape.rank);
    if (v.dtype != DType::F32) e["dtype"] = dtype_name(v.dtype);
    if (v.init.kind == ParamInit::Kind::data)
      graph_error("save_graph_json: value '{}' holds given values (weights), which a graph file does not store; "
                  "write them with save_weights (graph/weights.h) and the graph without them (strip_weights)", v.name);
    // Parameters always show their init; optimizer state only when it is not zeros.
    if (s == 1 || (s == 2 && !(v.init == ParamInit{ParamInit::Kind::constant, 0.0f})))
      e["init"] = ojson{{init_kind_name(v.init.kind), float_json(v.init.a)}};
    sections[s].push_back(e);
    canonical[s].push_back(id);
  }
  ojson nodes = ojson::array();
  std::vector<int> canonical_nodes;
  for (const Node& n : g.nodes) {
    ojson e;
    e["name"] = n.name;
    e["op"] = op_name(n.op);
    ojson ins = ojson::array();
    for (int in : n.inputs) ins.push_back(value_at(in, "node " + quote_name(n.name) + " input").name);
    e["inputs"] = ins;
    const std::string attrs = node_attrs_json(g, n);
    if (!attrs.empty()) e["attrs"] = ojson::parse(attrs);
    if (static_cast<int>(n.outputs.size()) != op_num_outputs(n.op))
      graph_error("save_graph_json: node {} ({}) has {} outputs; the op has {}", quote_name(n.name), op_name(n.op),
                  n.outputs.size(), op_num_outputs(n.op));
    if (!n.outputs.empty()) {
      const ValueInfo& v = value_at(n.outputs[0], "node " + quote_name(n.name) + " output");
      if (v.name != n.name)
        graph_error("save_graph_json: node {} outputs value {}; the file format names a node's output after "
                    "the node, so rename one", quote_name(n.name), quote_name(v.name));
      const Role def = is_output[static_cast<size_t>(n.outputs[0])] ? Role::output : Role::temporary;
      if (v.role != def) e["role"] = role_name(v.role);
      if (v.dtype != DType::F32) e["dtype"] = dtype_name(v.dtype);
      canonical_nodes.push_back(n.outputs[0]);
    }
    if (n.outputs.size() > 1) {
      const ValueInfo& w = value_at(n.outputs[1], "node '" + n.name + "' second output");
      e["second_output"] = w.name;
      const Role def = is_output[static_cast<size_t>(n.outputs[1])] ? Role::output : Role::temporary;
      if (w.role != def) e["second_role"] = role_name(w.role);
      canonical_nodes.push_back(n.outputs[1]);
    }
    nodes.push_back(e);
  }
  ojson outs = ojson::array();
  for (int o : g.outputs) outs.push_back(g.values[static_cast<size_t>(o)].name);

  std::vector<int> order;
  for (auto& c : canonical) order.insert(order.end(), c.begin(), c.end());
  order.insert(order.end(), canonical_nodes.begin(), canonical_nodes.end());
  if (static_cast<int>(order.size()) != nv)
    graph_error("save_graph_json: {} of the {} values are neither leaves nor node outputs (a producer id is wrong)",
                nv - static_cast<int>(order.size()), nv);
  bool identity = true;
  for (int i = 0; i < nv; ++i) identity = identity && order[static_cast<size_t>(i)] == i;

  // One entry per line: diffable, and readable without a JSON viewer.
  std::string out = "{\n  \"format\": \"twograph-graph\",\n  \"version\": 1";
  auto emit = [&out](const char* key, const ojson& arr) {
    out += fmt::format(",\n  \"{}\": [", key);
    for (size_t i = 0; i < arr.size(); ++i) out += (i ? ",\n    " : "\n    ") + arr[i].dump();
    out += arr.empty() ? "]" : "\n  ]";
  };
  const char* names[3] = {"inputs", "parameters", "optimizer_state"};
  for (int s = 0; s < 3; ++s)
    if (!sections[s].empty() || s == 0) emit(names[s], sections[s]);
  emit("nodes", nodes);
  out += ",\n  \"outputs\": " + outs.dump();
  if (!identity) {
    ojson vo = ojson::array();
    for (int id = 0; id < nv; ++id) vo.push_back(g.values[static_cast<size_t>(id)].name);
    out += ",\n  \"value_order\": " + vo.dump();
  }
  return out + "\n}\n";
}

}  // namespace tg
