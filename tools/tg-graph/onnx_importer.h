#pragma once
// The importer's state, shared by its files: onnx_import.cpp (environment,
// dispatch, elementwise ops and broadcasting), onnx_ops.cpp (matrix products,
// shapes, reductions, normalizations), onnx_cnn.cpp (convolutions, pools, batch
// norm, concat), onnx_slice.cpp (Slice, Split), onnx_fold.cpp (constant folding),
// onnx_where.cpp and onnx_bool.cpp (Where, bool tensors) and onnx_lm.cpp (Gather, GatherND,
// GatherElements).
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "tools/tg-graph/onnx_import.h"

namespace tg::onnx {

using Dims = std::vector<int64_t>;

// What an ONNX value name stands for: a constant (folded at import), or an IR
// value. dims are the ONNX dims: rank 0 stays rank 0 here, and is [1] in the IR.
struct Sym {
  bool constant = false;
  Tensor c;
  Value v;
  Dims dims;
};

// The IR shape of ONNX dims (rank 0 -> [1]); GraphError beyond the IR's rank or
// its per-value limit (kMaxValueElements).
Shape ir_shape(const Dims& d, const std::string& where);
std::string dims_str(const Dims& d);
// a * b for products of dims. Every such product goes through here: a wrapped one
// turns into a zero divisor or an index past the data. GraphError naming `where`
// when it overflows int64.
int64_t checked_mul(int64_t a, int64_t b, const std::string& where);
// The element count of dims, through checked_mul.
int64_t numel(const Dims& d, const std::string& where);
// The most f32 elements one IR value may hold (graph/validate.h's kMaxValueBytes).
extern const int64_t kMaxValueElements;

// What ONNX defines for an op the import maps (onnx_check.cpp): inputs at positions
// from min_inputs on are optional and may be "".
struct AttrSpec {
  const char* name;
  Attribute::Kind kind;
  bool required;
};
struct OpSpec {
  int min_inputs, max_inputs;  // max_inputs -1: any number (Concat)
  int min_outputs, max_outputs;
  int64_t since_opset;   // from this opset (0: never) ...
  int min_inputs_since;  // ... the op needs this many inputs
  std::vector<AttrSpec> attrs;  // the attributes the import reads, with their ONNX types
};
// The most outputs a Split may have: one slice node each.
constexpr int kMaxSplitOutputs = 4096;
// The op's spec, or nullptr for an op the import does not map.
const OpSpec* op_spec(const std::string& op_type);
// "an integer (INT)", for messages.
const char* attr_kind_text(Attribute::Kind k);
// numpy broadcasting of two shapes; GraphError naming `where` when they do not broadcast.
Dims broadcast_dims(const Dims& a, const Dims& b, const std::string& where);
// Axis in [0, rank); GraphError when out of range.
int64_t normalize_axis(int64_t axis, size_t rank, const std::string& where);

// Constant folding: GraphError for what it cannot fold (onnx_fold.cpp).
// room: the most elements the result may have (Importer::fold_room()).
void check_fold_size(const Dims& d, int64_t room, const std::string& where);
Tensor fold_binary(const std::string& op, const Tensor& a, const Tensor& b, int64_t room, const std::string& where);
Tensor fold_unary(const std::string& op, const Tensor& a, const std::string& where);
// cond ? a : b with numpy broadcasting; cond of any known type, nonzero is true.
Tensor fold_where(const Tensor& cond, const Tensor& a, const Tensor& b, int64_t room, const std::string& where);
Tensor fold_transpose(const Tensor& a, const std::vector<int64_t>& perm);
Tensor fold_cast(const Tensor& a, int64_t to, const std::string& where);
Tensor fold_gather(const Tensor& data, const Tensor& idx, int64_t axis, int64_t room, const std::string& where);
Tensor fold_concat(const std::vector<const Tensor*>& parts, int64_t axis, int64_t room, const std::string& where);
Tensor i64_tensor(const Dims& dims, std::vector<int64_t> values);
// Index into a tensor of dims `d` broadcast to `out`, for flat output index `flat`.
int64_t broadcast_index(int64_t flat, const Dims& out, const Dims& d);
// Every element equal: the value, for scale/bias rewrites.
bool uniform_value(const Tensor& t, float& out);

class Importer {
 public:
  Importer(const Model& m, const ImportOptions& opt, std::string source);
  Imported run();

  // ---- used by the op handlers -------------------------------------------
  const Node* node_ = nullptr;  // the node being mapped
  std::string where() const;    // "model.onnx: node 'n' (MatMul)"
  [[noreturn]] void refuse(const std::string& why) const;

  bool has_input(size_t i) const;
  const Sym& in(size_t i) const;
  Value value(size_t i);                       // as an IR value: constants become parameters
  Value value_of(const Sym& s, const std::string& name);
  const Tensor& constant(size_t i, const char* what) const;  // refuses a computed value
  std::vector<int64_t> ints_input(size_t i, const char* what) const;
  int64_t attr_i(const char* name, int64_t dflt) const;
  float attr_f(const char* name, float dflt) const;
  std::string attr_s(const char* name, const std::string& dflt) const;
  bool has_attr(const char* name) const;
  std::vector<int64_t> attr_ints(const char* name) const;
  const std::string& out_name(size_t i = 0) const;

  // Results of the current node.
  void set(Value v, Dims dims, size_t output = 0);
  // set(), after renaming v's node to the ONNX output's name when this node created it
  // (else v is an earlier value, and the output an alias of it).
  void finish(Value v, Dims dims);
  // A folded constant, counted against ImportOptions::max_fold_bytes (refused past it).
  void set_const(Tensor t, size_t output = 0);
  // The most elements a constant folded now may have.
  int64_t fold_room() const;
  void alias(const Sym& s, size_t output = 0);

  // IR helpers. `name` is the ONNX output the value stands for (helpers get a
  // suffixed fresh name, so that the node computing the output carries its name).
  std::string fresh(const std::string& base);
  Value apply(OpKind op, const std::vector<Value>& ins, const Attrs& at, const std::string& name);
  Value reshape_to(Value v, const Dims& dims, const std::string& name);
  Value expand_to(Value v, const Dims& from, const Dims& to, const std::string& name);
  Value fill_vec(int64_t n, float value, const std::string& name);

  Graph g_;  // before b_, which records into it
  RecordingBuilder b_{g_};
  int64_t opset_ = 0;
  std::vector<std::string> notes_;
  std::map<std::string, int> consumers_;  // per ONNX value: how many node inputs read it

 private:
  const Attribute* attr(const char* name, Attribute::Kind kind) const;  // refuses another kind
  void declare_inputs();
  size_t nodes_before_ = 0;  // IR nodes before the current ONNX node
  void map_node(const Node& n);
  void add_loss();

  const Model& m_;
  ImportOptions opt_;
  std::string source_;
  std::map<std::string, Sym> env_;
  std::map<std::string, Value> params_;
  std::set<std::string> onnx_names_;  // every ONNX value name: helpers must not take one
  int64_t folded_bytes_ = 0;          // what the constants folded so far hold
};

// An operand of a mapping built from another op's: its Sym, and the name a constant takes
// as a parameter (its ONNX name, or a fresh one for a constant the mapping makes).
struct Operand {
  const Sym& sym;
  std::string name;
};
// cond ? a : b (numpy broadcasting) as the IR's where, named `name`; a constant condition
// all true or all false is a choice instead (onnx_where.cpp).
Sym where_sym(Importer& im, const Operand& cond, const Operand& a, const Operand& b, const std::string& name);
// A constant of booleans (int64 0 and 1, as the reader holds them) as f32 0 and 1.
Sym bool_as_f32(const Sym& s);

// Op handlers, by ONNX op type (onnx_import.cpp and onnx_ops.cpp register theirs).
using Handler = std::function<void(Importer&)>;
const std::map<std::string, Handler>& handlers();
void add_elementwise_handlers(std::map<std::string, Handler>& h);
void add_tensor_handlers(std::map<std::string, Handler>& h);
void add_mask_handlers(std::map<std::string, Handler>& h);
void add_bool_handlers(std::map<std::string, Handler>& h);  // onnx_bool.cpp, from add_mask_handlers
void add_constant_handlers(std::map<std::string, Handler>& h);
void add_cnn_handlers(std::map<std::string, Handler>& h);
void add_slice_handlers(std::map<std::string, Handler>& h);  // onnx_slice.cpp
// Last: it wraps handlers registered before it (onnx_lm.cpp).
void add_language_model_handlers(std::map<std::string, Handler>& h);

}  // namespace tg::onnx
