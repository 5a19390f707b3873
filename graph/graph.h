#pragma once
// The IR: values (typed, shaped, with a role), nodes (one output, none for updates, two
// for a few fused ops), and a graph
// that owns both. Value and node ids are indices into the graph's vectors.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/attrs.h"
#include "graph/op.h"
#include "graph/shape.h"

namespace tg {

// Roles drive the memory breakdown (parameters, gradients, momentum, activations).
enum class Role : uint8_t {
  input,           // fed by the user every iteration (data, labels)
  parameter,       // persistent, updated by the optimizer
  gradient,        // d loss / d parameter
  optimizer_state, // momentum buffers
  activation,      // forward value that backward reads
  temporary,       // everything else
  output,          // what the user reads back (logits, loss)
};
const char* role_name(Role r);
bool parse_role(const std::string& s, Role& out);

// How a parameter or optimizer-state value starts. Both executors materialize it
// with the same deterministic generator (init.h), so they start bit-identical.
// `data` holds given values (weights imported from a model file, graph/weights.h):
// shared, so that copies of a graph and of its values do not copy the weights.
struct ParamInit {
  // seed: the executor's seed in element 0 (modulo 2^24, which an f32 holds exactly), zeros
  // after: dropout's rng state (graph/dropout.h), so that the seed option seeds the masks too.
  // running_stats: batch norm's running statistics [2, C], the mean row 0 and the variance row
  // 1 (PyTorch's initial running_mean and running_var), so a graph file can hold them.
  enum class Kind : uint8_t { uniform, constant, data, seed, running_stats };
  ParamInit() = default;
  ParamInit(Kind k, float value) : kind(k), a(value) {}
  Kind kind = Kind::uniform;
  float a = 0.0f;  // uniform: values in [-a, a] (a = 0 means 1/sqrt(fan_in)); constant: the value
  std::shared_ptr<const std::vector<float>> data;  // Kind::data: the values, row-major, numel of them
  bool operator==(const ParamInit& o) const {
    return kind == o.kind && a == o.a && (data == o.data || (data && o.data && *data == *o.data));
  }
};

struct ValueInfo {
  std::string name;
  Shape shape;
  DType dtype = DType::F32;
  Role role = Role::temporary;
  int producer = -1;  // node id, -1 for graph inputs and parameters
  ParamInit init;     // parameters and optimizer state only

  int64_t bytes() const { return shape.numel() * dtype_size(dtype); }
};

struct Node {
  std::string name;
  OpKind op = OpKind::copy;
  std::vector<int> inputs;   // value ids
  std::vector<int> outputs;  // value ids: one; none for update ops; two for the fused ops with a second result
  Attrs attrs;
};

// The default name of a node's second output (the fused ops that have one); the first
// output carries the node's name.
inline std::string second_output_name(const std::string& node) { return node + ":1"; }

class Graph {
 public:
  std::vector<ValueInfo> values;
  std::vector<Node> nodes;
  std::vector<int> outputs;  // value ids the user reads back

  int add_value(ValueInfo v);
  // Appends a node; sets the producer of its outputs. Does not validate.
  int add_node(Node n);

  // -1 when absent.
  int find_value(const std::string& name) const;
  int find_node(const std::string& name) const;

  // Value ids by role, in id order.
  std::vector<int> values_with_role(Role r) const;
  // Node ids in an order where every input is produced before use. Throws
  // GraphError naming a node on the cycle when there is one.
  std::vector<int> topo_order() const;
  // Per value: the node ids that read it, ascending.
  std::vector<std::vector<int>> consumers() const;
};

// Host data for a graph's inputs, by input name (row-major f32): what both executors
// are fed for one iteration.
using Feeds = std::map<std::string, std::vector<float>>;

}  // namespace tg
