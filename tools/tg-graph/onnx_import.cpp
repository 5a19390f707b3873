// The importer's core: the environment of ONNX names, the dispatch, outputs and
// the appended loss, and the elementwise ops with numpy broadcasting.
#include "tools/tg-graph/onnx_import.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "graph/errors.h"
#include "graph/quote.h"
#include "graph/graph_model.h"
#include "graph/json_io.h"
#include "graph/validate.h"
#include "graph/weights.h"
#include "tools/tg-graph/onnx_importer.h"

namespace tg::onnx {

const int64_t kMaxValueElements = kMaxValueBytes / dtype_size(DType::F32);

std::string dims_str(const Dims& d) { return fmt::format("[{}]", fmt::join(d, ",")); }

int64_t checked_mul(int64_t a, int64_t b, const std::string& where) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    graph_error("{}: a product of dims, {} * {}, overflows int64; the model's shapes are far beyond what the IR "
                "holds (at most {} elements a value): use smaller dims", where, a, b, kMaxValueElements);
  return r;
}

int64_t numel(const Dims& d, const std::string& where) {
  int64_t n = 1;
  for (int64_t x : d) n = checked_mul(n, x, where);
  return n;
}

namespace {

// The IR's per-value limit, for a value the import is about to make.
void require_fits(const Shape& s, const std::string& where) {
  int64_t n = 0;
  if (!numel_checked(s, n) || n > kMaxValueElements)
    graph_error("{}: a value of shape {} is over the IR's limit of {} elements ({} GiB) a value; use smaller "
                "dims (or a smaller --dim)", where, s.str(), kMaxValueElements, kMaxValueBytes >> 30);
}

}  // namespace

Shape ir_shape(const Dims& d, const std::string& where) {
  if (d.size() > static_cast<size_t>(kMaxRank))
    graph_error("{}: a value of shape {} has {} dims; the IR's tensors have at most {}", where, dims_str(d), d.size(),
                kMaxRank);
  Shape s;
  if (d.empty()) return Shape{1};
  s.rank = static_cast<int>(d.size());
  for (size_t i = 0; i < d.size(); ++i) {
    if (d[i] < 1) graph_error("{}: shape {} has a dim < 1; the IR has no empty tensors", where, dims_str(d));
    s.dims[i] = d[i];
  }
  require_fits(s, where);
  return s;
}

Dims broadcast_dims(const Dims& a, const Dims& b, const std::string& where) {
  Dims out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t x = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    const int64_t y = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    if (x != y && x != 1 && y != 1)
      graph_error("{}: shapes {} and {} do not broadcast (dim {}: {} vs {})", where, dims_str(a), dims_str(b), i, x, y);
    out[i] = x == 1 ? y : x;
  }
  return out;
}

int64_t normalize_axis(int64_t axis, size_t rank, const std::string& where) {
  const int64_t r = static_cast<int64_t>(rank);
  // A scalar has no axis: indexing dim 0 of one would read past its dims.
  if (axis < -r || axis >= r)
    graph_error("{}: axis {} is out of range for rank {}", where, axis, r);
  return axis < 0 ? axis + r : axis;
}

// ---- Importer -------------------------------------------------------------

Importer::Importer(const Model& m, const ImportOptions& opt, std::string source)
    : opset_(m.opset), m_(m), opt_(opt), source_(std::move(source)) {
  for (const ValueDecl& v : m.inputs) onnx_names_.insert(v.name);
  for (const auto& [name, t] : m.initializers) onnx_names_.insert(name);
  for (const Node& n : m.nodes) {
    for (const std::string& o : n.outputs) onnx_names_.insert(o);
    for (const std::string& i : n.inputs)
      if (!i.empty()) ++consumers_[i];
  }
}

std::string Importer::where() const {
  if (!node_) return source_;
  // The model's names are quoted (escaped, long ones cut), so a hostile name can
  // neither forge a line nor push the reason out of a capped message.
  return fmt::format("{}: node {} ({}{})", source_, quote_name(node_->name.empty() ? out_name() : node_->name),
                     printable_line(node_->op_type, kMaxQuotedNameBytes),
                     node_->domain.empty() ? "" : ", domain " + quote_name(node_->domain));
}

void Importer::refuse(const std::string& why) const { graph_error("{}: {}", where(), why); }

bool Importer::has_input(size_t i) const { return i < node_->inputs.size() && !node_->inputs[i].empty(); }

const Sym& Importer::in(size_t i) const {
  if (!has_input(i)) refuse(fmt::format("input {} is missing; the op needs it", i));
  auto it = env_.find(node_->inputs[i]);
  if (it == env_.end())
    refuse(fmt::format("input {} is produced by no earlier node, initializer or graph input; the file's nodes "
                       "must be in topological order", quote_name(node_->inputs[i])));
  return it->second;
}

Value Importer::value_of(const Sym& s, const std::string& name) {
  if (!s.constant) return s.v;
  if (auto it = params_.find(name); it != params_.end()) return it->second;
  if (s.c.external)
    refuse(fmt::format("{} keeps its data in an external file, which twograph does not read; save the model with "
                       "the weights inside (onnx.save(model, path, save_as_external_data=False))", quote_name(name)));
  if (s.c.type != Tensor::Type::f32)
    refuse(fmt::format("{} is a constant tensor of {} used as data; the IR's constants are float (integers enter "
                       "a graph as inputs: make it a graph input and feed it)", quote_name(name), s.c.type_name));
  for (size_t k = 0; k < s.c.f.size(); ++k)
    if (!std::isfinite(s.c.f[k]))
      refuse(fmt::format("{} holds {} at element {}; it becomes a parameter, and the IR's parameters are finite "
                         "(an inf or NaN weight makes every output and gradient NaN): fix the model's constant{}",
                         quote_name(name), s.c.f[k], k,
                         s.c.f[k] < 0 && std::isinf(s.c.f[k])
                             ? " (a -inf mask fill imports where a Where's -inf reaches a Softmax's input alone or "
                               "added to the scores, through reshapes, read by nothing else)"
                             : ""));
  ParamInit init;
  init.kind = ParamInit::Kind::data;
  init.data = std::make_shared<const std::vector<float>>(s.c.f);
  Value v = b_.parameter(name, ir_shape(s.dims, where()), init);
  g_.values[static_cast<size_t>(v.id)].dtype = v.dtype = s.c.dtype;
  params_.emplace(name, v);
  return v;
}

Value Importer::value(size_t i) { return value_of(in(i), node_->inputs[i]); }

const Tensor& Importer::constant(size_t i, const char* what) const {
  const Sym& s = in(i);
  if (!s.constant)
    refuse(fmt::format("its {} ({}) is computed at run time; twograph needs it constant (export with static "
                       "shapes)", what, quote_name(node_->inputs[i])));
  return s.c;
}

std::vector<int64_t> Importer::ints_input(size_t i, const char* what) const {
  const Tensor& t = constant(i, what);
  if (t.type != Tensor::Type::i64) refuse(fmt::format("its {} is {}, expected integers", what, t.type_name));
  return t.i;
}

bool Importer::has_attr(const char* name) const { return node_->attrs.count(name) > 0; }
// A field of the wrong kind reads as 0 or empty: an attribute is used only as the type it has.
const Attribute* Importer::attr(const char* name, Attribute::Kind kind) const {
  auto it = node_->attrs.find(name);
  if (it == node_->attrs.end()) return nullptr;
  if (it->second.kind != kind)
    refuse(fmt::format("attribute {} is {}, but {}'s {} is {}; write it with that type", quote_name(name),
                       attr_kind_text(it->second.kind), node_->op_type, name, attr_kind_text(kind)));
  return &it->second;
}
int64_t Importer::attr_i(const char* name, int64_t dflt) const {
  const Attribute* a = attr(name, Attribute::Kind::i);
  return a ? a->i : dflt;
}
float Importer::attr_f(const char* name, float dflt) const {
  const Attribute* a = attr(name, Attribute::Kind::f);
  if (a && !std::isfinite(a->f))
    refuse(fmt::format("attribute {} is {}; give a finite number", quote_name(name), a->f));
  return a ? a->f : dflt;
}
std::string Importer::attr_s(const char* name, const std::string& dflt) const {
  const Attribute* a = attr(name, Attribute::Kind::s);
  return a ? a->s : dflt;
}
std::vector<int64_t> Importer::attr_ints(const char* name) const {
  const Attribute* a = attr(name, Attribute::Kind::ints);
  return a ? a->ints : std::vector<int64_t>{};
}
const std::string& Importer::out_name(size_t i) const { return node_->outputs.at(i); }

void Importer::set(Value v, Dims dims, size_t output) {
  Sym s;
  s.v = v;
  s.dims = std::move(dims);
  env_[out_name(output)] = std::move(s);
}
void Importer::finish(Value v, Dims dims) {
  const int producer = g_.values[static_cast<size_t>(v.id)].producer;
  if (producer < static_cast<int>(nodes_before_)) {
    Sym s;
    s.v = v;
    s.dims = std::move(dims);
    return alias(s);
  }
  b_.rename_output(v, out_name());
  set(v, std::move(dims));
}

int64_t Importer::fold_room() const {
  const int64_t left = std::max<int64_t>(0, opt_.max_fold_bytes - folded_bytes_) / static_cast<int64_t>(sizeof(float));
  return std::min(left, kMaxValueElements);
}

void Importer::set_const(Tensor t, size_t output) {
  const int64_t bytes = static_cast<int64_t>(t.f.size() * sizeof(float) + t.i.size() * sizeof(int64_t));
  if (folded_bytes_ + bytes > opt_.max_fold_bytes)
    refuse(fmt::format("folding it makes a constant of {:.1f} MiB, and the constants the import computes would hold "
                       "{:.1f} MiB in all, over the limit of {:.1f} MiB; raise it (tg-graph import --max-fold-mib) if "
                       "the machine has the memory", bytes / 1048576.0, (folded_bytes_ + bytes) / 1048576.0,
                       opt_.max_fold_bytes / 1048576.0));
  folded_bytes_ += bytes;
  Sym s;
  s.constant = true;
  s.dims = t.dims;
  t.name = out_name(output);
  s.c = std::move(t);
  env_[out_name(output)] = std::move(s);
}
void Importer::alias(const Sym& s, size_t output) {
  const Sym copy = s;  // s may live in env_
  env_[out_name(output)] = copy;
}

std::string Importer::fresh(const std::string& base) {
  std::string name = base;
  for (int k = 1; onnx_names_.count(name) || b_.taken(name); ++k)
    name = fmt::format("{}_{}", base, k);
  return name;
}

Value Importer::apply(OpKind op, const std::vector<Value>& ins, const Attrs& at, const std::string& name) {
  // A graph file writes an inf or NaN as null, which loading refuses: such a number
  // stops here, where the node it came from is known.
  for (const auto& [field, x] : {std::pair<const char*, float>{"eps", at.eps}, {"alpha", at.alpha},
                                 {"value", at.value}, {"lr", at.lr}, {"momentum", at.momentum}})
    if (!std::isfinite(x))
      refuse(fmt::format("maps to a {} with {} = {}; the IR's attributes are finite numbers: a constant or "
                         "attribute of the model is inf or NaN here, or overflows f32", op_name(op), field, x));
  Value v;
  try {
    v = b_.apply(op, ins, at, name);
  } catch (const GraphError& e) {
    refuse(e.what());
  }
  if (v.valid()) require_fits(v.shape, where());
  return v;
}

Value Importer::reshape_to(Value v, const Dims& dims, const std::string& name) {
  const Shape s = ir_shape(dims, where());
  if (s == v.shape) return v;
  Attrs at;
  at.shape = s;
  return apply(OpKind::reshape, {v}, at, name);
}

Value Importer::fill_vec(int64_t n, float value, const std::string& name) {
  Attrs at;
  at.shape = Shape{n};
  at.value = value;
  return apply(OpKind::fill, {}, at, fresh(name));
}

// v of ONNX dims `from` broadcast to `to`: a reshape drops the size-1 dims that
// broadcast, then one broadcast op inserts each missing axis, in order.
Value Importer::expand_to(Value v, const Dims& from, const Dims& to, const std::string& name) {
  if (from == to) return v;
  ir_shape(to, where());  // the largest value made here: refused before any is
  const size_t r = to.size(), off = r - from.size();
  std::vector<bool> supplied(r, false);
  Dims kept;
  for (size_t i = off; i < r; ++i)
    if (from[i - off] == to[i]) {
      supplied[i] = true;
      kept.push_back(to[i]);
    }
  if (kept.empty())
    refuse(fmt::format("broadcasts a one-element computed value to {}; the IR cannot (multiply by a constant, or "
                       "reshape it first)", dims_str(to)));
  Value cur = v;
  if (ir_shape(kept, where()) != v.shape) {
    Attrs at;
    at.shape = ir_shape(kept, where());
    cur = apply(OpKind::reshape, {v}, at, fresh(name + ".squeeze"));
  }
  for (size_t i = 0; i < r; ++i) {
    if (supplied[i]) continue;
    Attrs at;
    at.axis = static_cast<int>(i);
    at.size = to[i];
    cur = apply(OpKind::broadcast, {cur}, at, fresh(name + ".broadcast"));
  }
  return cur;
}

void Importer::declare_inputs() {
  for (const ValueDecl& d : m_.inputs) {
    node_ = nullptr;
    const std::string w = fmt::format("{}: input {}", source_, quote_name(d.name));
    DType dtype = DType::F32;
    // The IR has no bool: a bool input (an attention mask) is fed as i32 0 and 1, which where's
    // condition takes (graph/dtype_rules.h).
    if (d.elem_type == "bool") dtype = DType::I32;
    else if (!onnx_value_dtype(d.elem_type, dtype))
      graph_error("{}: is {}; the IR's values are float, float16, bfloat16, int32 or int64 (ids and labels), and "
                  "bool (as int32)", w, d.elem_type);
    if (!d.has_shape) graph_error("{}: has no shape in the file; export with example inputs of a fixed shape", w);
    Dims dims;
    for (const Dim& x : d.dims) {
      if (x.value >= 1) {
        dims.push_back(x.value);
        continue;
      }
      // --dim names a symbolic dim; a size the file fixes, or a dim with neither size nor
      // name, is the model's to fix, and advice to use --dim could not work.
      if (x.param.empty())
        graph_error("{}: dim {} is {} in the file, a size no tensor can have; export the model with a size >= 1 "
                    "there", w, dims.size(), x.value);
      if (x.param == "?")
        graph_error("{}: dim {} has neither a size nor a name in the file, so --dim cannot set it; export the "
                    "model with a fixed size there or a named dynamic axis", w, dims.size());
      auto it = opt_.dims.find(x.param);
      if (it == opt_.dims.end())
        graph_error("{}: dim {} is symbolic ({}); give its value with --dim {}=N", w, dims.size(), quote_name(x.param),
                    x.param.size() > kMaxQuotedNameBytes ? "NAME" : escape_text(x.param));
      dims.push_back(it->second);
    }
    Sym s;
    s.dims = dims;
    s.v = b_.input(d.name, ir_shape(dims, w));
    g_.values[static_cast<size_t>(s.v.id)].dtype = s.v.dtype = dtype;
    env_[d.name] = s;
  }
}

void Importer::map_node(const Node& n) {
  node_ = &n;
  nodes_before_ = g_.nodes.size();
  if (!n.domain.empty())
    refuse(fmt::format("ops of domain {} are not ONNX standard ops; export without custom or contrib ops",
                       quote_name(n.domain)));
  if (n.outputs.empty()) refuse("has no outputs");
  const auto& hs = handlers();
  auto it = hs.find(n.op_type);
  if (it == hs.end()) {
    std::string known;
    for (const auto& [name, h] : hs) known += (known.empty() ? "" : ", ") + name;
    refuse(fmt::format("op {} is not supported: twograph's IR has no such op. Supported: {}", n.op_type, known));
  }
  it->second(*this);
  for (size_t i = 0; i < n.outputs.size(); ++i)
    if (!n.outputs[i].empty() && !env_.count(n.outputs[i]) && consumers_.count(n.outputs[i]))
      refuse(fmt::format("output {} ({}) is used, but twograph computes only the op's first output", i,
                         quote_name(n.outputs[i])));
}

void Importer::add_loss() {
  node_ = nullptr;
  if (opt_.loss == ImportOptions::Loss::none) return;
  if (g_.outputs.size() != 1)
    graph_error("{}: --loss needs a model with one output, this one has {}", source_, g_.outputs.size());
  const Value pred = RecordingBuilder::handle(g_, g_.outputs[0]);
  for (const char* name : {"target", "labels", "loss"})
    if (g_.find_value(name) >= 0)
      graph_error("{}: the model already has a value named {}, which --loss adds; rename it in the model", source_,
                  quote_name(name));
  Value loss;
  if (opt_.loss == ImportOptions::Loss::mse) {
    loss = b_.apply(OpKind::mse_loss, {pred, b_.input("target", pred.shape)}, {}, "loss");
  } else {
    if (pred.shape.rank != 2)
      graph_error("{}: --loss cross_entropy needs [n, classes] logits, the output is {}", source_, pred.shape.str());
    loss = b_.apply(OpKind::cross_entropy, {pred, b_.input("labels", Shape{pred.shape[0]})}, {}, "loss");
  }
  b_.mark_output(loss);
}

Imported Importer::run() {
  for (const auto& [name, t] : m_.initializers) {
    Sym s;
    s.constant = true;
    s.c = t;
    s.dims = t.dims;
    env_[name] = s;
  }
  declare_inputs();
  for (const Node& n : m_.nodes) map_node(n);
  node_ = nullptr;
  for (const ValueDecl& o : m_.outputs) {
    auto it = env_.find(o.name);
    if (it == env_.end()) graph_error("{}: output {} is produced by no node", source_, quote_name(o.name));
    if (it->second.constant)
      graph_error("{}: output {} is a constant (it depends on no input); twograph graphs compute their outputs",
                  source_, quote_name(o.name));
    // The file's declared shape is a check of the mapping itself.
    if (o.has_shape) {
      bool differs = o.dims.size() != it->second.dims.size();
      std::string declared;
      for (size_t i = 0; i < o.dims.size(); ++i) {
        declared += (i ? "," : "") + (o.dims[i].value >= 1 ? std::to_string(o.dims[i].value) : o.dims[i].param);
        differs = differs || (o.dims[i].value >= 1 && i < it->second.dims.size() && o.dims[i].value != it->second.dims[i]);
      }
      if (differs)
        graph_error("{}: output {} is declared [{}] in the file, but the import computed {}: the import is wrong "
                    "here, please report it", source_, quote_name(o.name), declared, dims_str(it->second.dims));
    }
    Value v = it->second.v;
    if (g_.values[static_cast<size_t>(v.id)].role != Role::temporary || g_.values[static_cast<size_t>(v.id)].name != o.name) {
      // An output that is an input, a parameter or an alias of another value needs a node of its own name.
      v = b_.apply(OpKind::copy, {v}, {}, o.name);
    }
    b_.mark_output(v);
  }
  add_loss();
  // Mapped nodes that no output needs (dead ONNX nodes, constants' leftovers) go.
  return Imported{prune_to_outputs(g_), std::move(notes_)};
}

namespace {

// What import writes must be what `tg-graph check` loads: the same save, load and
// validate run here, before anything is written. Every bad model is refused before
// this with its node named; a graph that fails here was built wrong by the import.
void check_loads_back(const Graph& g, const std::string& source) {
  Graph plain = g;
  strip_weights(plain);
  try {
    validate(load_graph_json(save_graph_json(plain), source));
  } catch (const GraphError& e) {
    throw std::logic_error(fmt::format("{}: the imported graph would not load back from its graph file (an import "
                                       "bug; please report it with the model): {}", source, e.what()));
  }
  for (const ValueInfo& v : g.values)
    if (v.init.kind == ParamInit::Kind::data && v.init.data)
      for (float x : *v.init.data)
        if (!std::isfinite(x))
          throw std::logic_error(fmt::format("{}: parameter {} holds {} (an import bug; please report it with the "
                                             "model)", source, quote_name(v.name), x));
}

}  // namespace

Imported import_model(const Model& m, const ImportOptions& opt, const std::string& source) {
  check_model(m, source);
  Model fused = m;
  std::vector<std::string> notes;
  lower_infinite_fills(fused, notes);
  fuse_patterns(fused, notes);
  Importer im(fused, opt, source);
  im.notes_ = notes;
  Imported out = im.run();
  check_loads_back(out.graph, source);
  return out;
}

// ---- elementwise ------------------------------------------------------------

namespace {

Attrs alpha(float a) {
  Attrs at;
  at.alpha = a;
  return at;
}

// x (of the output's shape) op k, for a constant k that is one value.
void with_scalar(Importer& im, const std::string& op, const Sym& x, float k, bool k_second) {
  const std::string& name = im.out_name();
  const int64_t last = x.v.shape.last();
  if (op == "Mul") {
    if (k == 1.0f) return im.alias(x);
    return im.set(im.apply(OpKind::scale, {x.v}, alpha(k), name), x.dims);
  }
  if (op == "Div") {
    if (!k_second) im.refuse("divides a constant by a tensor; the IR has no reciprocal");
    if (k == 0.0f) im.refuse("divides by the constant 0");
    if (k == 1.0f) return im.alias(x);
    return im.set(im.apply(OpKind::scale, {x.v}, alpha(1.0f / k), name), x.dims);
  }
  // Add and Sub: a bias add of a filled vector, which does not depend on the batch.
  Value base = x.v;
  float bias = k;
  if (op == "Sub" && k_second) bias = -k;  // x - k
  if (op == "Sub" && !k_second)            // k - x
    base = im.apply(OpKind::scale, {x.v}, alpha(-1.0f), im.fresh(name + ".neg"));
  if (bias == 0.0f && base.id == x.v.id) return im.alias(x);
  im.set(im.apply(OpKind::bias_add, {base, im.fill_vec(last, bias, name + ".fill")}, {}, name), x.dims);
}

// Strips leading 1s: [1,1,n] -> [n].
Dims significant(const Dims& d) {
  size_t i = 0;
  while (i + 1 < d.size() && d[i] == 1) ++i;
  return Dims(d.begin() + static_cast<std::ptrdiff_t>(i), d.end());
}

void binary(Importer& im, const std::string& op) {
  const Sym a = im.in(0);
  const Sym b = im.in(1);
  if (a.constant && b.constant) return im.set_const(fold_binary(op, a.c, b.c, im.fold_room(), im.where()));
  const Dims out = broadcast_dims(a.dims, b.dims, im.where());
  for (int side = 0; side < 2; ++side) {
    const Sym& c = side ? b : a;
    const Sym& x = side ? a : b;
    float k = 0;
    if (c.constant && x.dims == out && uniform_value(c.c, k)) return with_scalar(im, op, x, k, side == 1);
  }
  if (op == "Div")
    im.refuse("divides two tensors; the IR has no division (only a division by a constant maps, to scale)");
  const std::string& name = im.out_name();
  Value va = im.value(0), vb = im.value(1);
  // A bias over the last axis: bias_add, as the IR's Linear layers use.
  if ((op == "Add" || op == "Sub") && !out.empty()) {
    for (int side = 0; side < 2; ++side) {
      const Sym& small = side ? b : a;
      const Sym& big = side ? a : b;
      if (big.dims != out || small.dims == out || significant(small.dims) != Dims{out.back()}) continue;
      Value bias = im.reshape_to(side ? vb : va, {out.back()}, im.fresh(name + ".bias"));
      Value base = side ? va : vb;
      if (op == "Sub" && side == 1) bias = im.apply(OpKind::scale, {bias}, alpha(-1.0f), im.fresh(name + ".neg"));
      if (op == "Sub" && side == 0) base = im.apply(OpKind::scale, {base}, alpha(-1.0f), im.fresh(name + ".neg"));
      return im.set(im.apply(OpKind::bias_add, {base, bias}, {}, name), out);
    }
  }
  va = im.expand_to(va, a.dims, out, name + ".a");
  vb = im.expand_to(vb, b.dims, out, name + ".b");
  const OpKind k = op == "Add" ? OpKind::add : op == "Sub" ? OpKind::sub : OpKind::mul;
  im.set(im.apply(k, {va, vb}, {}, name), out);
}

void unary_const_or(Importer& im, const std::string& op, const char* why) {
  if (im.in(0).constant) return im.set_const(fold_unary(op, im.in(0).c, im.where()));
  im.refuse(why);
}

// An op the IR has: a constant folds (as the other constant arithmetic does), a tensor maps.
void unary_op(Importer& im, const std::string& op, OpKind k) {
  if (im.in(0).constant) return im.set_const(fold_unary(op, im.in(0).c, im.where()));
  im.set(im.apply(k, {im.value(0)}, {}, im.out_name()), im.in(0).dims);
}

}  // namespace

void add_elementwise_handlers(std::map<std::string, Handler>& h) {
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) h[op] = [op](Importer& im) { binary(im, op); };
  h["Relu"] = [](Importer& im) { im.set(im.apply(OpKind::relu, {im.value(0)}, {}, im.out_name()), im.in(0).dims); };
  // approximate="none" (the default, PyTorch's nn.GELU()) is the exact erf form.
  h["Gelu"] = [](Importer& im) {
    const std::string form = im.attr_s("approximate", "none");
    if (form != "none" && form != "tanh")
      im.refuse("has approximate=\"" + form + "\"; ONNX defines \"none\" (the exact erf form) and \"tanh\"");
    im.set(im.apply(form == "tanh" ? OpKind::gelu : OpKind::gelu_erf, {im.value(0)}, {}, im.out_name()),
           im.in(0).dims);
  };
  h["Neg"] = [](Importer& im) {
    if (im.in(0).constant) return im.set_const(fold_unary("Neg", im.in(0).c, im.where()));
    im.set(im.apply(OpKind::scale, {im.value(0)}, alpha(-1.0f), im.out_name()), im.in(0).dims);
  };
  h["Pow"] = [](Importer& im) {
    const Sym x = im.in(0);
    const Sym& e = im.in(1);
    if (x.constant && e.constant) return im.set_const(fold_binary("Pow", x.c, e.c, im.fold_room(), im.where()));
    float k = 0;
    if (!e.constant || !uniform_value(e.c, k) || !(k == 1.0f || k == 2.0f || k == 3.0f))
      im.refuse("raises a tensor to a power other than the constants 1, 2 or 3; the IR has only products");
    if (k == 1.0f) return im.alias(x);
    const std::string& name = im.out_name();
    const Value sq = im.apply(OpKind::mul, {x.v, x.v}, {}, k == 2.0f ? name : im.fresh(name + ".square"));
    im.set(k == 2.0f ? sq : im.apply(OpKind::mul, {x.v, sq}, {}, name), x.dims);
  };
  // Shape arithmetic (the TorchScript exporter's unflatten of nn.MultiheadAttention's packed
  // projection): of constants only, folded.
  h["Mod"] = [](Importer& im) {
    const bool fmod = im.attr_i("fmod", 0) != 0;
    const Tensor &a = im.constant(0, "dividend"), &b = im.constant(1, "divisor");
    if (a.type == Tensor::Type::f32 && !fmod) im.refuse("has fmod=0 on floats; ONNX defines float Mod with fmod=1 only");
    im.set_const(fold_binary(fmod ? "Fmod" : "Mod", a, b, im.fold_room(), im.where()));
  };
  h["Sqrt"] = [](Importer& im) {
    unary_const_or(im, "Sqrt", "takes the square root of a tensor; the IR has no sqrt (a LayerNorm written out "
                               "imports only as the whole formula: ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div)");
  };
  h["Reciprocal"] = [](Importer& im) { unary_const_or(im, "Reciprocal", "the IR has no reciprocal of a tensor"); };
  h["Tanh"] = [](Importer& im) { unary_op(im, "Tanh", OpKind::tanh); };
  h["Sigmoid"] = [](Importer& im) { unary_op(im, "Sigmoid", OpKind::sigmoid); };
  h["Exp"] = [](Importer& im) { unary_op(im, "Exp", OpKind::exp); };
  h["Log"] = [](Importer& im) { unary_op(im, "Log", OpKind::log); };
  h["Erf"] = [](Importer& im) {
    unary_const_or(im, "Erf", "the IR has no erf; the exact GELU formula x * 0.5 * (1 + erf(x / sqrt(2))) imports "
                              "only whole, as gelu_erf (or export nn.GELU() at opset 20, as one Gelu node)");
  };
}

}  // namespace tg::onnx
