// libFuzzer target: the input bytes are a graph file (docs/graph-format.md).
//
// A GraphError from the loader or the validator is the expected answer to a bad
// file. Everything else is a bug and aborts, so libFuzzer saves the input: a
// crash or sanitizer report, an exception of any other type, a GraphError
// without the source name, a loaded graph that the rest of graph/ (validation,
// shape inference, topological order, DOT and text dumps, save) cannot handle,
// a save/load round trip that changes the graph, and a validated graph with a
// value too large to allocate. Hangs and huge allocations are caught by
// libFuzzer's -timeout and -malloc_limit_mb (scripts/fuzz.sh sets both).
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "graph/dot.h"
#include "graph/errors.h"
#include "graph/json_io.h"
#include "graph/shape_inference.h"
#include "graph/text_dump.h"
#include "graph/validate.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/graph/graph_equal.h"

namespace {

constexpr const char* kSource = "fuzz.json";

[[noreturn]] void bug(const std::string& what) { tg::fuzz::bug("graph_file_fuzz", what); }
using tg::fuzz::type_name;

bool in_range(const tg::Graph& g, int id) { return id >= 0 && id < static_cast<int>(g.values.size()); }

// The loader already ordered the nodes to infer shapes, so a cycle here means it
// accepted one; the order must also respect every data edge.
std::vector<int> checked_order(const tg::Graph& g) {
  std::vector<int> order;
  try {
    order = g.topo_order();
  } catch (const tg::GraphError& e) {
    bug(std::string("topo_order rejects a graph the loader accepted: ") + e.what());
  }
  if (order.size() != g.nodes.size()) bug("topo_order does not list every node once");
  std::vector<int> position(g.nodes.size(), -1);
  for (size_t i = 0; i < order.size(); ++i) {
    const int id = order[i];
    if (id < 0 || id >= static_cast<int>(g.nodes.size()) || position[static_cast<size_t>(id)] >= 0)
      bug("topo_order is not a permutation of the node ids");
    position[static_cast<size_t>(id)] = static_cast<int>(i);
  }
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int in : g.nodes[i].inputs) {
      if (!in_range(g, in)) bug("a loaded node reads a value id out of range");
      const int p = g.values[static_cast<size_t>(in)].producer;
      if (p >= 0 && position[static_cast<size_t>(p)] > position[i])
        bug("topo_order puts node '" + g.nodes[i].name + "' before the producer of its input");
    }
  return order;
}

// Runs only on graphs that passed validation: what validation promises.
void check_valid(const tg::Graph& g, const std::vector<int>& order) {
  for (const tg::ValueInfo& v : g.values) {
    int64_t n = 0;
    if (!tg::numel_checked(v.shape, n) || n * tg::dtype_size(v.dtype) > tg::kMaxValueBytes)
      bug("validation passed a value too large to allocate: '" + v.name + "' " + v.shape.str());
  }
  for (int id : order) {
    const tg::Node& n = g.nodes[static_cast<size_t>(id)];
    std::vector<tg::Shape> shapes;
    for (int in : n.inputs) shapes.push_back(g.values[static_cast<size_t>(in)].shape);
    tg::Shape out;
    try {
      out = tg::infer_shape(n.op, shapes, n.attrs, n.name);
    } catch (const tg::GraphError& e) {
      bug(std::string("shape inference rejects a validated node: ") + e.what());
    }
    if (!n.outputs.empty() && g.values[static_cast<size_t>(n.outputs[0])].shape != out)
      bug("shape inference disagrees with the loaded shape of '" + n.name + "'");
  }
}

// save -> load must give the same graph, and saving that gives the same text.
void check_round_trip(const tg::Graph& g, const std::vector<std::string>& errors) {
  std::string text;
  tg::Graph back;
  try {
    text = tg::save_graph_json(g);
  } catch (const tg::GraphError& e) {
    bug(std::string("save_graph_json refuses a loaded graph: ") + e.what());
  }
  try {
    back = tg::load_graph_json(text, "saved.json");
  } catch (const tg::GraphError& e) {
    bug(std::string("load_graph_json refuses what save_graph_json wrote: ") + e.what() + "\n--- saved:\n" + text);
  }
  const std::string diff = tg::testing::graph_difference(g, back);
  if (!diff.empty()) bug("the save/load round trip changed the graph: " + diff + "\n--- saved:\n" + text);
  if (tg::save_graph_json(back) != text) bug("saving the reloaded graph gives different text");
  if (tg::validation_errors(back) != errors) bug("validation of the reloaded graph gives different errors");
}

void exercise(const tg::Graph& g) {
  // The dumps must work on any loaded graph, valid or not.
  if (tg::text_dump(g).empty() || tg::graph_to_dot(g, kSource).empty()) bug("an empty dump");
  const std::vector<std::string> errors = tg::validation_errors(g);
  bool threw = false;
  try {
    tg::validate(g);
  } catch (const tg::GraphError&) {
    threw = true;
  }
  if (threw == errors.empty()) bug("validate() and validation_errors() disagree");
  const std::vector<int> order = checked_order(g);
  if (errors.empty()) check_valid(g, order);
  check_round_trip(g, errors);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    tg::Graph g;
    try {
      g = tg::load_graph_json(text, kSource);
    } catch (const tg::GraphError& e) {
      // Every message names the file, so a user can tell which one is broken.
      if (std::string(e.what()).rfind(kSource, 0) != 0) bug(std::string("an error without the source name: ") + e.what());
      return 0;
    }
    exercise(g);
  } catch (const std::exception& e) {
    bug("unexpected exception " + type_name(typeid(e)) + ": " + e.what());
  } catch (...) {
    bug("an exception that is not a std::exception");
  }
  return 0;
}
