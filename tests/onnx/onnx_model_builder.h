#pragma once
// tg::onnx::Model objects built by hand (no libonnx needed), for the mapping and
// hostile-model tests: a ModelBuilder, attribute makers, refusal(), the message of the
// GraphError an import throws, and run(), an imported graph on the interpreter.
#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/errors.h"
#include "graph/init.h"
#include "kernels/interpreter.h"
#include "tools/tg-graph/onnx_import.h"

namespace tg::testing {

using onnx::Attribute;
using Dims = std::vector<int64_t>;

struct ModelBuilder {
  onnx::Model m;
  explicit ModelBuilder(int64_t opset = 18) { m.opset = opset; }
  ModelBuilder& input(const std::string& name, Dims dims, const std::string& type = "float") {
    onnx::ValueDecl d;
    d.name = name;
    d.elem_type = type;
    d.has_shape = true;
    for (int64_t x : dims) d.dims.push_back(onnx::Dim{x, ""});
    m.inputs.push_back(d);
    return *this;
  }
  ModelBuilder& symbolic_input(const std::string& name, const std::string& param, int64_t rest) {
    onnx::ValueDecl d;
    d.name = name;
    d.has_shape = true;
    d.dims = {onnx::Dim{-1, param}, onnx::Dim{rest, ""}};
    m.inputs.push_back(d);
    return *this;
  }
  ModelBuilder& init(const std::string& name, Dims dims, std::vector<float> v) {
    onnx::Tensor t;
    t.name = name;
    t.dims = std::move(dims);
    t.f = std::move(v);
    m.initializers[name] = t;
    return *this;
  }
  ModelBuilder& ints(const std::string& name, std::vector<int64_t> v) {
    onnx::Tensor t;
    t.name = name;
    t.dims = {static_cast<int64_t>(v.size())};
    t.type = onnx::Tensor::Type::i64;
    t.i = std::move(v);
    m.initializers[name] = t;
    return *this;
  }
  ModelBuilder& node(const std::string& op, std::vector<std::string> ins, std::vector<std::string> outs,
                     std::map<std::string, Attribute> attrs = {}) {
    onnx::Node n;
    n.name = "n" + std::to_string(m.nodes.size());
    n.op_type = op;
    n.inputs = std::move(ins);
    n.outputs = std::move(outs);
    n.attrs = std::move(attrs);
    m.nodes.push_back(n);
    return *this;
  }
  ModelBuilder& output(const std::string& name) {
    onnx::ValueDecl d;
    d.name = name;
    m.outputs.push_back(d);
    return *this;
  }
  Graph import(const onnx::ImportOptions& o = {}) const { return onnx::import_model(m, o, "test.onnx").graph; }
};

inline Attribute ai(int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::i;
  a.i = v;
  return a;
}
inline Attribute af(float v) {
  Attribute a;
  a.kind = Attribute::Kind::f;
  a.f = v;
  return a;
}
inline Attribute as(const std::string& v) {
  Attribute a;
  a.kind = Attribute::Kind::s;
  a.s = v;
  return a;
}
inline Attribute aints(std::vector<int64_t> v) {
  Attribute a;
  a.kind = Attribute::Kind::ints;
  a.ints = std::move(v);
  return a;
}

inline std::string refusal(const ModelBuilder& mb, const onnx::ImportOptions& o = {}) {
  try {
    mb.import(o);
  } catch (const GraphError& e) {
    return e.what();
  }
  return "(imported without an error)";
}

// Runs g on the interpreter with the given inputs (every other value as initialized);
// returns the output `out`.
inline std::vector<float> run(const Graph& g, const std::map<std::string, std::vector<float>>& inputs,
                              const std::string& out) {
  std::vector<std::vector<float>> values = make_values(g, 0);
  for (const auto& [name, data] : inputs) {
    const int id = g.find_value(name);
    REQUIRE_MESSAGE(id >= 0, "no input ", name);
    values[static_cast<size_t>(id)] = data;
  }
  interpret(g, values);
  const int id = g.find_value(out);
  REQUIRE_MESSAGE(id >= 0, "no output ", out);
  return values[static_cast<size_t>(id)];
}

}  // namespace tg::testing
