// What the model must be before any pass looks at it (check_model): opsets that
// exist, names that are UTF-8 and defined once, and each supported op's node with
// the inputs, outputs and attribute types that ONNX defines for it. The formula
// matcher and the op handlers index a node's inputs and read its attributes; they
// can do so unguarded only because this ran first.
#include <fmt/format.h>

#include <map>
#include <unordered_map>
#include <unordered_set>

#include "graph/errors.h"
#include "graph/quote.h"
#include "tools/tg-graph/onnx_importer.h"

namespace tg::onnx {

namespace {

using Kind = Attribute::Kind;

const std::map<std::string, OpSpec>& op_specs() {
  static const std::map<std::string, OpSpec> specs = [] {
    std::map<std::string, OpSpec> s;
    const OpSpec unary{1, 1, 1, 1, 0, 0, {}};
    const OpSpec binary{2, 2, 1, 1, 0, 0, {}};
    for (const char* op : {"Relu", "Neg", "Sqrt", "Reciprocal", "Tanh", "Sigmoid", "Exp", "Log", "Erf", "Identity"}) s[op] = unary;
    for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "MatMul", "Expand"}) s[op] = binary;
    s["Mod"] = {2, 2, 1, 1, 0, 0, {{"fmod", Kind::i, false}}};
    s["Gelu"] = {1, 1, 1, 1, 0, 0, {{"approximate", Kind::s, false}}};
    // Masks: of constants folded (onnx_lm.cpp), of computed bools mapped (onnx_bool.cpp).
    for (const char* op : {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor"}) s[op] = binary;
    for (const char* op : {"Not", "IsNaN"}) s[op] = unary;
    s["Where"] = {3, 3, 1, 1, 0, 0, {}};
    s["Gather"] = {2, 2, 1, 1, 0, 0, {{"axis", Kind::i, false}}};
    s["GatherND"] = {2, 2, 1, 1, 0, 0, {{"batch_dims", Kind::i, false}}};
    s["GatherElements"] = {2, 2, 1, 1, 0, 0, {{"axis", Kind::i, false}}};
    s["Gemm"] = {2, 3, 1, 1, 0, 0,
                 {{"transA", Kind::i, false}, {"transB", Kind::i, false}, {"alpha", Kind::f, false},
                  {"beta", Kind::f, false}}};
    s["Reshape"] = {2, 2, 1, 1, 0, 0, {{"allowzero", Kind::i, false}}};
    s["Flatten"] = {1, 1, 1, 1, 0, 0, {{"axis", Kind::i, false}}};
    s["Squeeze"] = {1, 2, 1, 1, 0, 0, {{"axes", Kind::ints, false}}};
    // Before opset 13 the axes were an attribute; from 13 they are a required input.
    s["Unsqueeze"] = {1, 2, 1, 1, 13, 2, {{"axes", Kind::ints, false}}};
    s["Transpose"] = {1, 1, 1, 1, 0, 0, {{"perm", Kind::ints, false}}};
    s["Softmax"] = {1, 1, 1, 1, 0, 0, {{"axis", Kind::i, false}}};
    s["LayerNormalization"] = {2, 3, 1, 3, 0, 0, {{"axis", Kind::i, false}, {"epsilon", Kind::f, false}}};
    for (const char* op : {"ReduceSum", "ReduceMean"})
      s[op] = {1, 2, 1, 1, 0, 0,
               {{"axes", Kind::ints, false}, {"keepdims", Kind::i, false}, {"noop_with_empty_axes", Kind::i, false}}};
    s["Constant"] = {0, 0, 1, 1, 0, 0,
                     {{"value", Kind::tensor, false}, {"value_float", Kind::f, false},
                      {"value_floats", Kind::floats, false}, {"value_int", Kind::i, false},
                      {"value_ints", Kind::ints, false}, {"value_string", Kind::s, false}}};
    s["Dropout"] = {1, 3, 1, 2, 0, 0, {}};
    s["Cast"] = {1, 1, 1, 1, 0, 0, {{"to", Kind::i, true}}};
    s["Shape"] = {1, 1, 1, 1, 0, 0, {{"start", Kind::i, false}, {"end", Kind::i, false}}};
    s["Concat"] = {1, -1, 1, 1, 0, 0, {{"axis", Kind::i, true}}};
    s["ConstantOfShape"] = {1, 1, 1, 1, 0, 0, {{"value", Kind::tensor, false}}};
    // From opset 13 the split sizes are an optional input; from 18 num_outputs may say how many.
    s["Split"] = {1, 2, 1, kMaxSplitOutputs, 0, 0,
                  {{"axis", Kind::i, false}, {"split", Kind::ints, false}, {"num_outputs", Kind::i, false}}};
    const std::vector<AttrSpec> window{{"strides", Kind::ints, false}, {"pads", Kind::ints, false},
                                       {"dilations", Kind::ints, false}, {"auto_pad", Kind::s, false}};
    s["Conv"] = {2, 3, 1, 1, 0, 0, window};
    s["Conv"].attrs.push_back({"group", Kind::i, false});
    s["Conv"].attrs.push_back({"kernel_shape", Kind::ints, false});
    s["MaxPool"] = {1, 1, 1, 2, 0, 0, window};
    s["MaxPool"].attrs.push_back({"ceil_mode", Kind::i, false});
    s["MaxPool"].attrs.push_back({"kernel_shape", Kind::ints, true});
    s["MaxPool"].attrs.push_back({"storage_order", Kind::i, false});
    s["AveragePool"] = {1, 1, 1, 1, 0, 0, window};
    s["AveragePool"].attrs.push_back({"ceil_mode", Kind::i, false});
    s["AveragePool"].attrs.push_back({"kernel_shape", Kind::ints, true});
    s["AveragePool"].attrs.push_back({"count_include_pad", Kind::i, false});
    s["GlobalAveragePool"] = unary;
    s["BatchNormalization"] = {5, 5, 1, 5, 0, 0,
                               {{"epsilon", Kind::f, false}, {"momentum", Kind::f, false},
                                {"training_mode", Kind::i, false}, {"spatial", Kind::i, false}}};
    s["Sum"] = {1, -1, 1, 1, 0, 0, {}};
    // Before opset 10 the starts, ends and axes were attributes; from 10 they are inputs.
    s["Slice"] = {1, 5, 1, 1, 10, 3, {{"starts", Kind::ints, false}, {"ends", Kind::ints, false}, {"axes", Kind::ints, false}}};
    s["Where"] = {3, 3, 1, 1, 0, 0, {}};
    s["ConvTranspose"] = {2, 3, 1, 1, 0, 0, window};
    for (AttrSpec a : {AttrSpec{"group", Kind::i, false}, AttrSpec{"kernel_shape", Kind::ints, false},
                       AttrSpec{"output_padding", Kind::ints, false}, AttrSpec{"output_shape", Kind::ints, false}})
      s["ConvTranspose"].attrs.push_back(a);
    s["LRN"] = {1, 1, 1, 1, 0, 0,
                {{"size", Kind::i, true}, {"alpha", Kind::f, false}, {"beta", Kind::f, false}, {"bias", Kind::f, false}}};
    // Before opset 11 the bounds were attributes; from 11 they are optional inputs.
    s["Clip"] = {1, 3, 1, 1, 0, 0, {{"min", Kind::f, false}, {"max", Kind::f, false}}};
    return s;
  }();
  return specs;
}

// The value attributes of Constant, of which ONNX requires exactly one.
constexpr const char* kConstantValues[] = {"value",     "value_float",  "value_floats", "value_int",
                                           "value_ints", "value_string", "value_strings", "sparse_value"};

std::string count_text(int lo, int hi, const char* what) {
  if (hi < 0) return fmt::format("{} or more {}s", lo, what);
  if (lo == hi) return fmt::format("{} {}{}", lo, what, lo == 1 ? "" : "s");
  return fmt::format("{} to {} {}s", lo, hi, what);
}

class ModelChecker {
 public:
  ModelChecker(const Model& m, const std::string& source) : m_(m), src_(source) {}

  void run() {
    check_opsets();
    for (size_t i = 0; i < m_.inputs.size(); ++i) {
      const std::string& name = m_.inputs[i].name;
      name_ok(name, fmt::format("{}: graph input {}", src_, i), "graph input");
      if (m_.initializers.count(name))
        graph_error("{}: graph input {} is also an initializer; a value is defined once: rename one",
                    src_, quote_name(name));
      define(name, {Definition::input, i}, fmt::format("{}: graph input {}", src_, i));
    }
    for (const auto& [name, t] : m_.initializers) {
      name_ok(name, src_ + ": an initializer", "initializer");
      define(name, {Definition::initializer, 0}, src_ + ": an initializer");
      tensor_ok(t, fmt::format("{}: initializer {}", src_, quote_name(name)));
    }
    for (size_t i = 0; i < m_.nodes.size(); ++i) check_node(i);
    std::unordered_set<std::string> listed;
    for (size_t i = 0; i < m_.outputs.size(); ++i) {
      const std::string& name = m_.outputs[i].name;
      name_ok(name, fmt::format("{}: graph output {}", src_, i), "graph output");
      if (!listed.insert(name).second)
        graph_error("{}: graph output {} is listed twice; list each output once", src_, quote_name(name));
    }
  }

 private:
  void check_opsets() {
    std::map<std::string, int64_t> seen;
    for (const OpsetImport& o : m_.opset_imports) {
      const std::string domain = o.domain == "ai.onnx" ? "" : o.domain;
      const std::string shown = domain.empty() ? "the default ONNX domain" : "domain " + quote_name(domain);
      auto [it, fresh] = seen.emplace(domain, o.version);
      if (!fresh)
        graph_error("{}: imports {} twice (opsets {} and {}); which one applies is ambiguous: keep one "
                    "opset_import per domain", src_, shown, it->second, o.version);
      if (o.version < 1)
        graph_error("{}: imports opset {} of {}; opset versions start at 1: export with a real opset", src_,
                    o.version, shown);
    }
    if (m_.opset == 0) graph_error("{}: imports no opset of the default ONNX domain", src_);
    if (m_.opset < 1 || m_.opset > kLatestOpset)
      graph_error("{}: imports opset {} of the default ONNX domain, which does not exist (the opsets twograph knows "
                  "are 1 to {}); export with an opset in that range (torch.onnx.export(..., opset_version=17))",
                  src_, m_.opset, kLatestOpset);
  }

  // Names go into the graph file, which is UTF-8 JSON; "" names nothing.
  void name_ok(const std::string& name, const std::string& where, const char* what) const {
    if (name.empty())
      graph_error("{}: has an empty name; give every {} a name (ONNX allows \"\" only for an omitted optional "
                  "input or output)", where, what);
    if (!valid_utf8(name))
      graph_error("{}: its name {} is not valid UTF-8; names go into the graph file, which is UTF-8: rename it",
                  where, quote_name(name));
  }

  // What defines a value: the graph input or node at `index`, or an initializer.
  struct Definition {
    enum Kind { input, initializer, node } kind;
    size_t index;
  };

  // Every value has one definition (ONNX's single static assignment).
  void define(const std::string& name, Definition d, const std::string& where) {
    auto [it, fresh] = defined_.emplace(name, d);
    if (fresh) return;
    const Definition& first = it->second;
    const std::string what = first.kind == Definition::input         ? "graph input " + quote_name(name)
                             : first.kind == Definition::initializer ? "initializer " + quote_name(name)
                                                                     : "an output of " + node_text(first.index);
    graph_error("{}: defines {}, which is already {}; every value is defined once (ONNX's SSA rule): rename it",
                where, quote_name(name), what);
  }

  // The reader guarantees it; a model built another way must not let a fold read past the data.
  void tensor_ok(const Tensor& t, const std::string& where) const {
    if (t.external || t.type == Tensor::Type::other) return;
    int64_t n = 1;
    for (int64_t d : t.dims) {
      if (d < 0) graph_error("{}: has a negative dim {}", where, d);
      n = checked_mul(n, d, where);
    }
    const size_t held = t.type == Tensor::Type::f32 ? t.f.size() : t.i.size();
    if (held != static_cast<size_t>(n))
      graph_error("{}: holds {} values, but its dims {} give {}", where, held, dims_str(t.dims), n);
  }

  // As Importer::where() names a node: its name, else its first output's.
  std::string node_text(size_t index) const {
    const Node& n = m_.nodes[index];
    const std::string who = !n.name.empty()                              ? quote_name(n.name)
                            : !n.outputs.empty() && !n.outputs[0].empty() ? quote_name(n.outputs[0])
                                                                           : fmt::format("#{}", index);
    return fmt::format("node {} ({}{})", who, escape_text(n.op_type),
                       n.domain.empty() ? "" : ", domain " + quote_name(n.domain));
  }

  void check_node(size_t index) {
    const Node& n = m_.nodes[index];
    const std::string where = src_ + ": " + node_text(index);
    if (!valid_utf8(n.name)) graph_error("{}: the node's name is not valid UTF-8; rename it", where);
    const OpSpec* spec = n.domain.empty() ? op_spec(n.op_type) : nullptr;
    if (spec) check_arity(n, *spec, where);
    if (n.outputs.empty()) graph_error("{}: has no outputs; a node computes at least one value", where);
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (!valid_utf8(n.inputs[i]))
        graph_error("{}: input {} {} is not valid UTF-8; names go into the graph file, which is UTF-8: rename it",
                    where, i, quote_name(n.inputs[i]));
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const std::string& o = n.outputs[i];
      if (o.empty()) {
        if (spec && static_cast<int>(i) >= spec->min_outputs) continue;  // an omitted optional output
        graph_error("{}: output {} has an empty name; name every output that the op computes (\"\" marks only an "
                    "omitted optional output)", where, i);
      }
      if (!valid_utf8(o))
        graph_error("{}: output {} {} is not valid UTF-8; names go into the graph file, which is UTF-8: rename it",
                    where, i, quote_name(o));
      define(o, {Definition::node, index}, where);
    }
    if (spec) check_attributes(n, *spec, where);
  }

  void check_arity(const Node& n, const OpSpec& spec, const std::string& where) const {
    const int min_in =
        spec.since_opset > 0 && m_.opset >= spec.since_opset ? spec.min_inputs_since : spec.min_inputs;
    const int ins = static_cast<int>(n.inputs.size()), outs = static_cast<int>(n.outputs.size());
    if (ins < min_in || (spec.max_inputs >= 0 && ins > spec.max_inputs))
      graph_error("{}: has {} input{}, but {} takes {}{}; fix the node's inputs", where, ins, ins == 1 ? "" : "s",
                  n.op_type, count_text(min_in, spec.max_inputs, "input"),
                  min_in != spec.min_inputs ? fmt::format(" from opset {}", spec.since_opset) : "");
    if (outs < spec.min_outputs || outs > spec.max_outputs)
      graph_error("{}: has {} output{}, but {} gives {}; fix the node's outputs", where, outs, outs == 1 ? "" : "s",
                  n.op_type, count_text(spec.min_outputs, spec.max_outputs, "output"));
    for (int i = 0; i < std::min(ins, min_in); ++i)
      if (n.inputs[static_cast<size_t>(i)].empty())
        graph_error("{}: input {} is \"\" (omitted), but {} requires it; connect it to a value", where, i, n.op_type);
    if (spec.max_inputs < 0)  // variadic: every input is required
      for (int i = min_in; i < ins; ++i)
        if (n.inputs[static_cast<size_t>(i)].empty())
          graph_error("{}: input {} is \"\" (omitted); every input of {} is required", where, i, n.op_type);
  }

  void check_attributes(const Node& n, const OpSpec& spec, const std::string& where) const {
    for (const AttrSpec& a : spec.attrs) {
      auto it = n.attrs.find(a.name);
      if (it == n.attrs.end()) {
        if (a.required) graph_error("{}: has no attribute {}, which {} requires", where, quote_name(a.name), n.op_type);
        continue;
      }
      if (it->second.kind != a.kind)
        graph_error("{}: attribute {} is {}, but {}'s {} is {}; write it with that type", where, quote_name(a.name),
                    attr_kind_text(it->second.kind), n.op_type, a.name, attr_kind_text(a.kind));
      if (a.kind == Kind::tensor) tensor_ok(it->second.t, fmt::format("{}: attribute {}", where, quote_name(a.name)));
    }
    if (n.op_type == "Constant") {
      int values = 0;
      for (const char* v : kConstantValues) values += n.attrs.count(v) ? 1 : 0;
      if (values != 1)
        graph_error("{}: has {} value attributes; a Constant has exactly one of value, value_float, value_floats, "
                    "value_int, value_ints, value_string, value_strings and sparse_value", where, values);
    }
  }

  const Model& m_;
  const std::string& src_;
  std::unordered_map<std::string, Definition> defined_;
};

}  // namespace

const OpSpec* op_spec(const std::string& op_type) {
  auto it = op_specs().find(op_type);
  return it == op_specs().end() ? nullptr : &it->second;
}

const char* attr_kind_text(Attribute::Kind k) {
  switch (k) {
    case Kind::i: return "an integer (INT)";
    case Kind::f: return "a float (FLOAT)";
    case Kind::s: return "a string (STRING)";
    case Kind::ints: return "a list of integers (INTS)";
    case Kind::floats: return "a list of floats (FLOATS)";
    case Kind::tensor: return "a tensor (TENSOR)";
    case Kind::other: break;
  }
  return "of another type (a graph, a sparse tensor, strings or a type)";
}

void check_model(const Model& m, const std::string& source) { ModelChecker(m, source).run(); }

}  // namespace tg::onnx
