// Reading graph files (docs/graph-format.md): the strict JSON parse, then the Loader,
// which checks every field and builds the graph. Writing them is graph/json_save.cpp.
#include "graph/json_io.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "graph/dtype_rules.h"
#include "graph/errors.h"
#include "graph/file_read.h"
#include "graph/json_strict.h"
#include "graph/shape_inference.h"

namespace tg {

namespace {

using json = nlohmann::json;

// ---- attributes: which op reads which is a column of the op table (graph/op.h) ----

unsigned op_attrs(OpKind op) { return op_traits(op).attrs; }

std::string attr_list(unsigned mask) {
  std::string s;
  for (int a = 0; a < kNumAttrs; ++a)
    if (mask & (1u << a)) s += (s.empty() ? "" : ", ") + std::string(attr_name(static_cast<AttrId>(a)));
  return s.empty() ? "none" : s;
}

// ---- reading ----------------------------------------------------------------

// The graph file's words for a breach of the strict JSON policy (graph/json_strict.h).
json parse_text(const std::string& text, const std::string& src) {
  json j;
  const JsonIssue issue = parse_json_strict(text, kMaxGraphJsonDepth, j);
  int line = 1, col = 1;
  json_line_col(text, issue.byte, line, col);
  switch (issue.kind) {
    case JsonIssue::Kind::none: return j;
    case JsonIssue::Kind::byte_order_mark:
      graph_error("{}:1:1: starts with a UTF-8 byte-order mark (bytes EF BB BF), which JSON does not allow "
                  "(RFC 8259); save the file as UTF-8 without a BOM", src);
    case JsonIssue::Kind::nul_byte:
      graph_error("{}:{}:{}: holds a NUL byte (U+0000); a graph file is UTF-8 text, and JSON allows no raw NUL (in "
                  "a string, write \\u0000); is it a binary file, or truncated by a crash?", src, line, col);
    case JsonIssue::Kind::too_deep:
      graph_error("{}:{}:{}: JSON nested more than {} levels deep; a graph file needs 6 (nodes[i].attrs.program[k]), "
                  "so this file is broken or hostile", src, line, col, kMaxGraphJsonDepth);
    case JsonIssue::Kind::duplicate_key:
      graph_error("{}: key {} appears twice in one JSON object; give each key once", src, quote_name(issue.key));
    case JsonIssue::Kind::syntax: {
      // nlohmann quotes the bytes it read, which may be binary garbage or a megabyte of
      // an unterminated string: escaped and cut.
      constexpr size_t kShown = 240;
      std::string detail = issue.detail;
      const size_t colon = detail.find(": ");  // drop nlohmann's "[json.exception...] parse error at ...: "
      if (colon != std::string::npos) detail = detail.substr(colon + 2);
      const std::string what = detail.size() > kShown ? escape_text(detail.substr(0, kShown)) + "..."
                                                       : escape_text(detail);
      graph_error("{}:{}:{}: invalid JSON: {}{}", src, line, col, what,
                  issue.byte + 1 >= text.size() ? " (is the file truncated?)" : "");
    }
    case JsonIssue::Kind::out_of_range: break;
  }
  graph_error("{}: invalid JSON: {}", src, escape_text(issue.detail));
}

// A JSON value in a message: compact, escaped, and cut after 80 bytes (a hostile
// file's 10 MB array must not become a 10 MB message).
std::string shown(const json& j) {
  constexpr size_t kShown = 80;
  const std::string d = j.dump(-1, ' ', false, json::error_handler_t::replace);
  return d.size() > kShown ? escape_text(d.substr(0, kShown)) + fmt::format("... ({} bytes)", d.size()) : escape_text(d);
}

std::string describe(const json& j) {
  if (j.is_string()) return "a string";
  if (j.is_array()) return "an array";
  if (j.is_object()) return "an object";
  if (j.is_null()) return "null";
  return j.dump();  // numbers and booleans: show the value
}

struct LeafDecl {
  std::string path;
  ValueInfo info;
};
struct NodeDecl {
  std::string path;
  Node node;
  std::vector<std::string> input_names;
  bool has_shape = false, has_role = false, has_dtype = false;
  Shape shape;
  Role role = Role::temporary;
  DType dtype = DType::F32;
  int perm_len = 0;
  // The fused ops with two outputs: the second one's name and role.
  std::string second_name;
  bool has_second_role = false;
  Role second_role = Role::temporary;
};

class Loader {
 public:
  explicit Loader(std::string src) : src_(std::move(src)) {}

  Graph load(const json& root) {
    if (!root.is_object()) fail("(top level)", "must be a JSON object {\"format\": \"twograph-graph\", ...}, got " + describe(root));
    check_keys(root, "(top level)", {"format", "version", "description", "inputs", "parameters", "optimizer_state",
                                     "nodes", "outputs", "value_order"});
    const std::string fmt_name = get_string(require(root, "format", "(top level)"), "format");
    if (fmt_name != "twograph-graph") fail("format", "is " + quote_name(fmt_name) + "; a graph file says \"format\": \"twograph-graph\"");
    const int64_t version = get_int(require(root, "version", "(top level)"), "version", 0, 1000);
    if (version != 1) fail("version", fmt::format("is {}; this build reads version 1", version));
    if (root.contains("description")) get_string(root["description"], "description");
    read_leaves(root, "inputs", Role::input);
    read_leaves(root, "parameters", Role::parameter);
    read_leaves(root, "optimizer_state", Role::optimizer_state);
    const json& nodes = require(root, "nodes", "(top level)");
    if (!nodes.is_array()) fail("nodes", "must be an array of nodes, got " + describe(nodes));
    for (size_t i = 0; i < nodes.size(); ++i) read_node(nodes[i], fmt::format("nodes[{}]", i));
    read_outputs(require(root, "outputs", "(top level)"));
    return build(root);
  }

 private:
  [[noreturn]] void fail(const std::string& path, const std::string& msg) const {
    graph_error("{}: {}: {}", src_, path, msg);
  }

  const json& require(const json& obj, const char* key, const std::string& path) const {
    auto it = obj.find(key);
    if (it == obj.end()) fail(path, fmt::format("missing key '{}'", key));
    return *it;
  }

  void check_keys(const json& obj, const std::string& path, std::initializer_list<const char*> known) const {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      bool ok = false;
      for (const char* k : known) ok = ok || it.key() == k;
      if (!ok) {
        std::string list;
        for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
        fail(path, fmt::format("unknown key {}; known: {}", quote_name(it.key()), list));
      }
    }
  }

  std::string get_string(const json& j, const std::string& path) const {
    if (!j.is_string()) fail(path, "must be a string, got " + describe(j));
    return j.get<std::string>();
  }
  bool get_bool(const json& j, const std::string& path) const {
    if (!j.is_boolean()) fail(path, "must be true or false, got " + describe(j));
    return j.get<bool>();
  }
  int64_t get_int(const json& j, const std::string& path, int64_t lo, int64_t hi) const {
    if (!j.is_number_integer()) fail(path, "must be an integer, got " + describe(j));
    if (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail(path, fmt::format("{} is too large; must be in [{}, {}]", j.dump(), lo, hi));
    const int64_t v = j.get<int64_t>();
    if (v < lo || v > hi) fail(path, fmt::format("{} is out of range; must be in [{}, {}]", v, lo, hi));
    return v;
  }
  float get_float(const json& j, const std::string& path) const {
    if (!j.is_number()) fail(path, "must be a number, got " + describe(j));
    const double v = j.get<double>();
    // Accept what rounds to a finite float, not only what is <= FLT_MAX: save
    // writes FLT_MAX as "3.4028235e+38", which is a little above it as a double.
    // The bound is halfway between FLT_MAX and 2^128 (that midpoint rounds to inf).
    const double round_limit = std::ldexp(2.0 - std::ldexp(1.0, -24), 127);
    if (!std::isfinite(v) || std::fabs(v) >= round_limit)
      fail(path, fmt::format("{} does not fit in a 32-bit float", j.dump()));
    return static_cast<float>(v);
  }

  // allow_infer: a reshape target may hold one -1.
  Shape get_shape(const json& j, const std::string& path, bool allow_infer) const {
    if (!j.is_array()) fail(path, "must be an array of dims like [32, 512], got " + describe(j));
    if (j.empty() || j.size() > static_cast<size_t>(kMaxRank))
      fail(path, fmt::format("has {} dims; give 1 to {} (a scalar is [1])", j.size(), kMaxRank));
    Shape s;
    for (size_t d = 0; d < j.size(); ++d) {
      const std::string p = fmt::format("{}[{}]", path, d);
      const int64_t v = get_int(j[d], p, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
      if (v <= 0 && !(allow_infer && v == -1))
        fail(p, fmt::format("dim is {}; every dim must be >= 1{}", v, allow_infer ? " (or -1 once, to infer it)" : ""));
      s.dims[static_cast<size_t>(s.rank++)] = v;
    }
    int64_t n = 0;
    if (!allow_infer && !numel_checked(s, n))
      fail(path, fmt::format("{} has an element count or byte size that overflows int64; use smaller dims", s.str()));
    return s;
  }

  DType get_dtype(const json& j, const std::string& path) const {
    DType dt;
    if (!parse_dtype(get_string(j, path), dt)) fail(path, "unknown dtype " + quote_name(j.get<std::string>()) + "; use f32, bf16, f16, i32 or i64");
    return dt;
  }

  void declare(const std::string& name, const std::string& path) {
    if (name.empty()) fail(path, "is empty; every value and node needs a name");
    auto [it, fresh] = names_.emplace(name, path);
    if (!fresh) fail(path, fmt::format("{} is already the name of {}; names must be unique", quote_name(name), it->second));
  }

  void read_leaves(const json& root, const char* section, Role role) {
    if (!root.contains(section)) return;
    const json& arr = root[section];
    if (!arr.is_array()) fail(section, "must be an array, got " + describe(arr));
    for (size_t i = 0; i < arr.size(); ++i) {
      const std::string path = fmt::format("{}[{}]", section, i);
      const json& e = arr[i];
      if (!e.is_object()) fail(path, "must be an object {\"name\": ..., \"shape\": [...]}, got " + describe(e));
      if (role == Role::input) check_keys(e, path, {"name", "shape", "dtype"});
      else check_keys(e, path, {"name", "shape", "dtype", "init"});
      LeafDecl d;
      d.path = path;
      d.info.name = get_string(require(e, "name", path), path + ".name");
      declare(d.info.name, path + ".name");
      d.info.shape = get_shape(require(e, "shape", path), path + ".shape", false);
      d.info.role = role;
      if (e.contains("dtype")) d.info.dtype = get_dtype(e["dtype"], path + ".dtype");
      if (role == Role::optimizer_state) d.info.init = ParamInit{ParamInit::Kind::constant, 0.0f};
      if (e.contains("init")) d.info.init = get_init(e["init"], path + ".init");
      leaves_.push_back(std::move(d));
    }
  }

  ParamInit get_init(const json& j, const std::string& path) const {
    if (!j.is_object() || j.size() != 1)
      fail(path, "must be {\"uniform\": a} (values in [-a, a]; 0 means 1/sqrt(fan_in)) or {\"constant\": c}, got " + shown(j));
    ParamInit init;
    const std::string key = j.begin().key();
    if (key == "uniform") init.kind = ParamInit::Kind::uniform;
    else if (key == "constant") init.kind = ParamInit::Kind::constant;
    else if (key == "seed") init.kind = ParamInit::Kind::seed;  // dropout's rng state: {"seed": 0}
    else if (key == "running_stats") init.kind = ParamInit::Kind::running_stats;  // {"running_stats": 0}
    else fail(path, "unknown init " + quote_name(key) + "; known: uniform, constant, seed, running_stats");
    const json& a = j.begin().value();
    init.a = get_float(a, path + "." + key);
    // The sign is checked on the float and on the number as written: -1e-50 rounds
    // to -0.0f, which a plain `< 0` lets through.
    if (init.kind == ParamInit::Kind::uniform && (std::signbit(init.a) || a.get<double>() < 0.0))
      fail(path + ".uniform", fmt::format("must be >= 0, got {}{}: values are drawn from [-a, a] (0 means "
                                          "1/sqrt(fan_in)); drop the minus sign", a.dump(),
                                          init.a == 0.0f && a.get<double>() != 0.0 ? ", which rounds to -0 as a float" : ""));
    return init;
  }

  void read_node(const json& e, const std::string& path) {
    if (!e.is_object()) fail(path, "must be an object {\"name\": ..., \"op\": ..., \"inputs\": [...]}, got " + describe(e));
    check_keys(e, path, {"name", "op", "inputs", "attrs", "shape", "role", "dtype", "second_output", "second_role"});
    NodeDecl d;
    d.path = path;
    d.node.name = get_string(require(e, "name", path), path + ".name");
    const std::string op = get_string(require(e, "op", path), path + ".op");
    if (!parse_op(op, d.node.op)) {
      std::string list;
      for (int i = 0; i < kNumOps; ++i) list += (i ? ", " : "") + std::string(op_name(static_cast<OpKind>(i)));
      fail(path + ".op", fmt::format("unknown op {}; known ops: {}", quote_name(op), list));
    }
    declare(d.node.name, path + ".name");
    const json& ins = require(e, "inputs", path);
    if (!ins.is_array()) fail(path + ".inputs", "must be an array of value names, got " + describe(ins));
    for (size_t i = 0; i < ins.size(); ++i) d.input_names.push_back(get_string(ins[i], fmt::format("{}.inputs[{}]", path, i)));
    if (!op_arity_ok(d.node.op, static_cast<int>(ins.size())))
      fail(path + ".inputs", fmt::format("{} {} takes {}, got {}", op, quote_name(d.node.name), op_arity_text(d.node.op),
                                         ins.size()));
    const bool two = op_num_outputs(d.node.op) == 2;
    for (const char* k : {"second_output", "second_role"})
      if (!two && e.contains(k))
        fail(path, fmt::format("{} has one output or none, so it has no '{}'; remove it", op, k));
    if (two) {
      d.second_name = e.contains("second_output") ? get_string(e["second_output"], path + ".second_output")
                                                  : second_output_name(d.node.name);
      declare(d.second_name, path + ".second_output");
      if (e.contains("second_role")) {
        const std::string r = get_string(e["second_role"], path + ".second_role");
        if (!parse_role(r, d.second_role) || d.second_role == Role::input || d.second_role == Role::parameter ||
            d.second_role == Role::optimizer_state)
          fail(path + ".second_role", fmt::format("{} is not a role of a computed value; use temporary, activation, "
                                                  "gradient or output", quote_name(r)));
        d.has_second_role = true;
      }
    }
    if (e.contains("attrs")) read_attrs(e["attrs"], path + ".attrs", d);
    // Attrs' perm starts as the identity, so a missing perm would run as a copy.
    if (d.node.op == OpKind::transpose && d.perm_len == 0)
      fail(path + ".attrs", fmt::format("transpose {} needs \"perm\", one entry per input axis (e.g. [1, 0] swaps "
                                        "a matrix's axes); it has no default", quote_name(d.node.name)));
    const bool has_output = op_num_outputs(d.node.op) >= 1;
    for (const char* k : {"shape", "role", "dtype"})
      if (!has_output && e.contains(k))
        fail(path, fmt::format("{} is an update op with no output, so it has no '{}'; remove it", op, k));
    if (e.contains("shape")) {
      d.has_shape = true;
      d.shape = get_shape(e["shape"], path + ".shape", false);
    }
    if (e.contains("role")) {
      const std::string r = get_string(e["role"], path + ".role");
      if (!parse_role(r, d.role) || d.role == Role::input || d.role == Role::parameter || d.role == Role::optimizer_state)
        fail(path + ".role", fmt::format("{} is not a role of a computed value; use temporary, activation, gradient or output", quote_name(r)));
      d.has_role = true;
    }
    if (e.contains("dtype")) {
      d.has_dtype = true;
      d.dtype = get_dtype(e["dtype"], path + ".dtype");
    }
    if (!has_output) update_names_.insert(d.node.name);
    nodes_.push_back(std::move(d));
  }

  void read_attrs(const json& j, const std::string& path, NodeDecl& d) {
    if (!j.is_object()) fail(path, "must be an object like {\"trans_b\": true}, got " + describe(j));
    Attrs& at = d.node.attrs;
    const unsigned allowed = op_attrs(d.node.op);
    for (auto it = j.begin(); it != j.end(); ++it) {
      int a = 0;
      while (a < kNumAttrs && it.key() != attr_name(static_cast<AttrId>(a))) ++a;
      if (a == kNumAttrs) fail(path, fmt::format("unknown attribute {}; known: {}", quote_name(it.key()), attr_list(~0u)));
      if (!(allowed & (1u << a)))
        fail(path, fmt::format("{} does not take attribute {}; {} takes: {}", op_name(d.node.op), quote_name(it.key()),
                               op_name(d.node.op), attr_list(allowed)));
      const std::string p = path + "." + it.key();
      const json& v = it.value();
      const int64_t int_max = std::numeric_limits<int>::max();
      switch (static_cast<AttrId>(a)) {
        case AttrId::trans_a: at.trans_a = get_bool(v, p); break;
        case AttrId::trans_b: at.trans_b = get_bool(v, p); break;
        case AttrId::in_place: at.in_place = get_bool(v, p); break;
        case AttrId::axis: at.axis = static_cast<int>(get_int(v, p, -int_max, int_max)); break;
        case AttrId::size: {  // cross_entropy's 0: every column of the logits is a class
          const bool classes = d.node.op == OpKind::cross_entropy || d.node.op == OpKind::cross_entropy_grad;
          at.size = get_int(v, p, classes ? 0 : 1, std::numeric_limits<int64_t>::max());
          break;
        }
        case AttrId::eps: at.eps = get_float(v, p); break;
        case AttrId::alpha: at.alpha = get_float(v, p); break;
        case AttrId::value: at.value = get_float(v, p); break;
        case AttrId::lr: at.lr = get_float(v, p); break;
        case AttrId::momentum: at.momentum = get_float(v, p); break;
        case AttrId::shape: at.shape = get_shape(v, p, d.node.op == OpKind::reshape); break;
        case AttrId::perm: {
          if (!v.is_array() || v.empty() || v.size() > static_cast<size_t>(kMaxRank))
            fail(p, fmt::format("must be an array of 1 to {} axes like [1, 0], got {}", kMaxRank, shown(v)));
          for (size_t i = 0; i < v.size(); ++i)
            at.perm[i] = static_cast<int>(get_int(v[i], fmt::format("{}[{}]", p, i), 0, kMaxRank - 1));
          d.perm_len = static_cast<int>(v.size());
          break;
        }
        case AttrId::act:
          if (!v.is_string() || !parse_act(v.get<std::string>(), at.act))
            fail(p, "must be one of \"none\", \"relu\", \"gelu\", got " + shown(v));
          break;
        case AttrId::program: at.program = get_program(v, p); break;
        case AttrId::heads: at.heads = get_heads(v, p); break;
        case AttrId::to: at.to = get_dtype(v, p); break;
        case AttrId::conv: at.conv = get_conv(v, p); break;
        case AttrId::start: at.start = get_int(v, p, 0, std::numeric_limits<int64_t>::max()); break;
        case AttrId::growth_factor: at.growth_factor = get_float(v, p); break;
        case AttrId::backoff_factor: at.backoff_factor = get_float(v, p); break;
        case AttrId::growth_interval: at.growth_interval = get_int(v, p, 1, std::numeric_limits<int64_t>::max()); break;
        case AttrId::adam: at.adam = get_adam(v, p); break;
        case AttrId::max_norm: at.max_norm = get_float(v, p); break;
        case AttrId::causal: at.causal = get_bool(v, p); break;
        case AttrId::ignore_index:
          at.ignore_index = get_int(v, p, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
          break;
        case AttrId::p: at.p = get_float(v, p); break;
        case AttrId::rng_stream: at.rng_stream = get_int(v, p, 0, std::numeric_limits<uint32_t>::max()); break;
        case AttrId::channels_last: at.channels_last = get_bool(v, p); break;
      }
    }
  }

  // {"kernel": [r, s], "stride": [..], "pads": [top, left, bottom, right], "dilation": [..],
  // "groups": g, "ceil_mode": bool, "output_padding": [..], "channels_last": bool}, every key optional (ONNX's defaults); whether the
  // window fits the input is the shape rule's to check.
  ConvAttr get_conv(const json& j, const std::string& path) const {
    if (!j.is_object())
      fail(path, "must be an object like {\"stride\": [2, 2], \"pads\": [1, 1, 1, 1]}, got " + describe(j));
    const int64_t int_max = std::numeric_limits<int>::max();
    ConvAttr c;
    auto ints = [&](const json& v, const std::string& p, int* out, size_t n, int64_t lo) {
      if (!v.is_array() || v.size() != n) fail(p, fmt::format("must be an array of {} integers, got {}", n, shown(v)));
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<int>(get_int(v[i], fmt::format("{}[{}]", p, i), lo, int_max));
    };
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string p = path + "." + it.key();
      const json& v = it.value();
      if (it.key() == "kernel")
        ints(v, p, c.kernel.data(), 2, 1);
      else if (it.key() == "stride")
        ints(v, p, c.stride.data(), 2, 1);
      else if (it.key() == "pads")
        ints(v, p, c.pads.data(), 4, 0);
      else if (it.key() == "dilation")
        ints(v, p, c.dilation.data(), 2, 1);
      else if (it.key() == "groups")
        c.groups = static_cast<int>(get_int(v, p, 1, int_max));
      else if (it.key() == "ceil_mode")
        c.ceil_mode = get_bool(v, p);
      else if (it.key() == "output_padding")
        ints(v, p, c.output_padding.data(), 2, 0);
      else if (it.key() == "channels_last")
        c.channels_last = get_bool(v, p);
      else
        fail(p, "is not a key of conv; give kernel, stride, pads, dilation, groups, ceil_mode, output_padding and "
                "channels_last");
    }
    return c;
  }

  // {"beta1": b1, "beta2": b2, "eps": e, "weight_decay": w}, every key optional (AdamW's
  // defaults); whether the values make sense is the shape rule's to check.
  AdamAttr get_adam(const json& j, const std::string& path) const {
    if (!j.is_object())
      fail(path, "must be an object like {\"beta1\": 0.9, \"beta2\": 0.999, \"eps\": 1e-8, \"weight_decay\": 0.01}, got " +
                     describe(j));
    AdamAttr a;
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string p = path + "." + it.key();
      if (it.key() == "beta1")
        a.beta1 = get_float(it.value(), p);
      else if (it.key() == "beta2")
        a.beta2 = get_float(it.value(), p);
      else if (it.key() == "eps")
        a.eps = get_float(it.value(), p);
      else if (it.key() == "weight_decay")
        a.weight_decay = get_float(it.value(), p);
      else
        fail(p, "is not a key of adam; give beta1, beta2, eps and weight_decay");
    }
    return a;
  }

  // {"count": heads, "a": bool, "b": bool, "out": bool}; whether the shapes fit is the
  // shape rule's to check.
  HeadView get_heads(const json& j, const std::string& path) const {
    if (!j.is_object())
      fail(path, "must be an object like {\"count\": 8, \"a\": true, \"b\": true, \"out\": false}, got " +
                     describe(j));
    HeadView h;
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string p = path + "." + it.key();
      if (it.key() == "count")
        h.count = get_int(it.value(), p, 1, std::numeric_limits<int>::max());
      else if (it.key() == "a")
        h.a = get_bool(it.value(), p);
      else if (it.key() == "b")
        h.b = get_bool(it.value(), p);
      else if (it.key() == "out")
        h.out = get_bool(it.value(), p);
      else
        fail(p, "is not a key of heads; give count, a, b and out");
    }
    if (h.count == 0) fail(path, "has no count: give the number of heads, e.g. \"count\": 8");
    return h;
  }

  // The instructions only; their operands against the node's inputs are the shape
  // rule's to check (graph/ew_program.h), after the inputs are known.
  EwProgram get_program(const json& j, const std::string& path) const {
    if (!j.is_array() || j.empty() || j.size() > static_cast<size_t>(kMaxEwInstrs))
      fail(path, fmt::format("must be an array of 1 to {} instructions like [[\"mul\", 0, 1], [\"relu\", 2]], got {}",
                             kMaxEwInstrs, j.is_array() ? fmt::format("{} instructions", j.size()) : describe(j)));
    EwProgram prog;
    prog.code.resize(j.size());
    for (size_t k = 0; k < j.size(); ++k) {
      const std::string p = fmt::format("{}[{}]", path, k);
      const json& e = j[k];
      if (!e.is_array() || e.empty() || !e[0].is_string())
        fail(p, "must be an instruction [op, operand, ...] like [\"add\", 0, 1], got " + e.dump());
      EwInstr& in = prog.code[k];
      if (!parse_ew_op(e[0].get<std::string>(), in.op)) {
        std::string ops;
        for (int o = 0; o < kNumEwOps; ++o) ops += (o ? ", " : "") + std::string(ew_op_name(static_cast<EwOp>(o)));
        fail(p + "[0]", fmt::format("unknown op '{}'; a program runs: {}", e[0].get<std::string>(), ops));
      }
      const bool binary = ew_op_binary(in.op), scale = in.op == EwOp::scale, cast = in.op == EwOp::cast;
      const size_t want = binary || scale || cast ? 3 : 2;
      if (e.size() != want)
        fail(p, fmt::format("{} takes {}, got {} entries: {}", ew_op_name(in.op),
                            binary ? "[op, a, b]" : scale ? "[op, a, alpha]" : cast ? "[op, a, dtype]" : "[op, a]",
                            e.size(), e.dump()));
      const int64_t last = kMaxEwInputs + kMaxEwInstrs - 1;
      in.a = static_cast<uint8_t>(get_int(e[1], p + "[1]", 0, last));
      if (binary) in.b = static_cast<uint8_t>(get_int(e[2], p + "[2]", 0, last));
      if (scale) in.alpha = get_float(e[2], p + "[2]");
      if (cast) in.to = get_dtype(e[2], p + "[2]");
    }
    return prog;
  }

  void read_outputs(const json& j) {
    if (!j.is_array()) fail("outputs", "must be an array of value names, got " + describe(j));
    std::unordered_set<std::string> seen;
    for (size_t i = 0; i < j.size(); ++i) {
      const std::string p = fmt::format("outputs[{}]", i);
      output_names_.push_back(get_string(j[i], p));
      if (!seen.insert(output_names_.back()).second) fail(p, quote_name(output_names_.back()) + " is listed twice");
    }
  }

  int resolve(const std::string& name, const std::string& path) const {
    auto it = ids_.find(name);
    if (it != ids_.end()) return it->second;
    if (update_names_.count(name))
      fail(path, fmt::format("{} is an update node ({}), which has no output value to read", quote_name(name), "sgd/sgd_momentum"));
    fail(path, fmt::format("unknown value {}; a value is declared under inputs, parameters or optimizer_state, "
                           "or is the name of a node", quote_name(name)));
  }

  // Value ids: leaves in section order, then node outputs in node order, unless
  // "value_order" lists every value name (save writes it to keep ids exact).
  std::vector<ValueInfo> order_values(const json& root, const std::vector<ValueInfo>& decls) {
    std::vector<ValueInfo> out;
    if (!root.contains("value_order")) {
      out = decls;
    } else {
      const json& vo = root["value_order"];
      if (!vo.is_array()) fail("value_order", "must be an array of value names, got " + describe(vo));
      std::unordered_map<std::string, size_t> by_name;
      for (size_t i = 0; i < decls.size(); ++i) by_name.emplace(decls[i].name, i);
      std::vector<bool> used(decls.size(), false);
      for (size_t i = 0; i < vo.size(); ++i) {
        const std::string p = fmt::format("value_order[{}]", i);
        const std::string n = get_string(vo[i], p);
        auto it = by_name.find(n);
        if (it == by_name.end()) fail(p, "unknown value " + quote_name(n));
        if (used[it->second]) fail(p, quote_name(n) + " is listed twice");
        used[it->second] = true;
        out.push_back(decls[it->second]);
      }
      if (out.size() != decls.size())
        fail("value_order", fmt::format("lists {} of the {} values; list every value once, or leave it out",
                                        out.size(), decls.size()));
    }
    for (size_t i = 0; i < out.size(); ++i) ids_[out[i].name] = static_cast<int>(i);
    return out;
  }

  Graph build(const json& root) {
    const std::unordered_set<std::string> outs(output_names_.begin(), output_names_.end());
    std::vector<ValueInfo> decls;
    for (const LeafDecl& l : leaves_) decls.push_back(l.info);
    for (const NodeDecl& d : nodes_) {
      if (op_num_outputs(d.node.op) == 0) continue;
      ValueInfo v;
      v.name = d.node.name;
      v.dtype = d.dtype;
      v.role = d.has_role ? d.role : outs.count(v.name) ? Role::output : Role::temporary;
      decls.push_back(v);
      if (d.second_name.empty()) continue;
      ValueInfo w;
      w.name = d.second_name;
      w.role = d.has_second_role ? d.second_role : outs.count(w.name) ? Role::output : Role::temporary;
      decls.push_back(w);
    }
    Graph g;
    g.values = order_values(root, decls);
    for (NodeDecl& d : nodes_) {
      for (size_t i = 0; i < d.input_names.size(); ++i)
        d.node.inputs.push_back(resolve(d.input_names[i], fmt::format("{}.inputs[{}]", d.path, i)));
      if (op_num_outputs(d.node.op) >= 1) d.node.outputs.push_back(ids_.at(d.node.name));
      if (!d.second_name.empty()) d.node.outputs.push_back(ids_.at(d.second_name));
      g.add_node(d.node);
    }
    for (size_t i = 0; i < output_names_.size(); ++i)
      g.outputs.push_back(resolve(output_names_[i], fmt::format("outputs[{}]", i)));
    std::vector<int> order;
    try {
      order = g.topo_order();
    } catch (const GraphError& e) {
      graph_error("{}: {}", src_, e.what());
    }
    for (int id : order) infer_node(g, id);
    return g;
  }

  void infer_node(Graph& g, int id) {
    const NodeDecl& d = nodes_[static_cast<size_t>(id)];
    const Node& n = g.nodes[static_cast<size_t>(id)];
    std::vector<Shape> shapes;
    for (int in : n.inputs) shapes.push_back(g.values[static_cast<size_t>(in)].shape);
    if (d.perm_len > 0 && d.perm_len != shapes[0].rank)
      fail(d.path + ".attrs.perm", fmt::format("has {} entries, but input {} {} has rank {}; give one entry per axis",
                                               d.perm_len, quote_name(d.input_names[0]), shapes[0].str(), shapes[0].rank));
    std::vector<DType> dtypes;
    for (int in : n.inputs) dtypes.push_back(g.values[static_cast<size_t>(in)].dtype);
    std::vector<Shape> outs;
    std::vector<DType> out_dtypes;
    try {
      outs = infer_shapes(n.op, shapes, n.attrs, quote_name(n.name));
      out_dtypes = infer_dtypes(n.op, dtypes, n.attrs, quote_name(n.name));
    } catch (const GraphError& e) {
      fail(d.path, e.what());
    }
    if (n.outputs.empty()) return;
    if (d.has_dtype && d.dtype != out_dtypes[0])
      fail(d.path + ".dtype", fmt::format("{} {} declares {}, but its inputs give {}; fix the dtype or remove it",
                                          op_name(n.op), quote_name(n.name), dtype_name(d.dtype),
                                          dtype_name(out_dtypes[0])));
    for (size_t k = 0; k < n.outputs.size(); ++k) g.values[static_cast<size_t>(n.outputs[k])].dtype = out_dtypes[k];
    const Shape out = outs[0];
    if (n.outputs.size() > 1) g.values[static_cast<size_t>(n.outputs[1])].shape = outs[1];
    if (d.has_shape && d.shape != out) {
      std::string ins;
      for (const Shape& s : shapes) ins += (ins.empty() ? "" : ", ") + s.str();
      fail(d.path + ".shape", fmt::format("{} {} declares {}, but its inputs {} give {}; fix the shape or remove it",
                                          op_name(n.op), quote_name(n.name), d.shape.str(), ins, out.str()));
    }
    g.values[static_cast<size_t>(n.outputs[0])].shape = out;
  }

  std::string src_;
  std::vector<LeafDecl> leaves_;
  std::vector<NodeDecl> nodes_;
  std::vector<std::string> output_names_;
  std::unordered_map<std::string, std::string> names_;  // name -> JSON path that declared it
  std::unordered_set<std::string> update_names_;
  std::unordered_map<std::string, int> ids_;
};

}  // namespace

Graph load_graph_json(const std::string& text, const std::string& source_name) {
  if (text.size() > kMaxGraphFileBytes)
    graph_error("{}: is {} bytes; graph files are limited to {} MiB", source_name, text.size(), kMaxGraphFileBytes >> 20);
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    graph_error("{}: is empty; a graph file is a JSON object {{\"format\": \"twograph-graph\", ...}} "
                "(see docs/graph-format.md)", source_name);
  const json root = parse_text(text, source_name);
  return Loader(source_name).load(root);
}

Graph load_graph_file(const std::string& path) {
  const std::string text = read_regular_file(
      path, kMaxGraphFileBytes, "a .json graph file", fmt::format("graph files are limited to {} MiB", kMaxGraphFileBytes >> 20));
  return load_graph_json(text, printable_line(path, kMaxShownPathBytes));  // the path only names it in messages
}

}  // namespace tg
