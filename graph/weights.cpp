#include "graph/weights.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "graph/errors.h"
#include "graph/file_read.h"
#include "graph/json_strict.h"
#include "graph/quote.h"

namespace tg {

namespace {

using json = nlohmann::json;

// A header this large is not a weights file (a real one lists a few thousand tensors).
constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;
// What one file may hold: more than any device (the IR caps one value at 256 GiB).
constexpr uintmax_t kMaxWeightsFileBytes = uintmax_t{1} << 40;

// The data is stored little-endian; the project's targets (x86-64, aarch64 Linux) are.
bool host_is_little_endian() {
  const uint32_t one = 1;
  unsigned char first = 0;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

void require_little_endian(const std::string& source) {
  if (!host_is_little_endian())
    graph_error("{}: this host is big-endian; safetensors data is little-endian and twograph does not convert it",
                source);
}

struct Entry {
  std::string name;
  WeightTensor t;
  uint64_t begin = 0, end = 0;
};

uint64_t read_u64_le(const std::string& bytes) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
  return v;
}

Entry parse_entry(const std::string& source, const std::string& name, const json& e) {
  const std::string where = fmt::format("{}: tensor {}", source, quote_name(name));
  if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
    graph_error("{}: must be an object with dtype, shape and data_offsets", where);
  if (!e["dtype"].is_string()) graph_error("{}: dtype must be a string", where);
  const std::string dtype = e["dtype"].get<std::string>();
  if (dtype != "F32")
    graph_error("{}: dtype {}; twograph reads F32 tensors only (convert the weights to float32 first)", where,
                listed(dtype));
  const json& shape = e["shape"];
  if (!shape.is_array()) graph_error("{}: shape must be an array of dims", where);
  if (shape.size() > static_cast<size_t>(kMaxRank))
    graph_error("{}: has {} dims; the IR's shapes have at most {}", where, shape.size(), kMaxRank);
  Entry out;
  out.name = name;
  out.t.shape.rank = shape.empty() ? 1 : static_cast<int>(shape.size());
  out.t.shape.dims.fill(0);
  if (shape.empty()) out.t.shape.dims[0] = 1;  // a scalar reads as [1]
  for (size_t i = 0; i < shape.size(); ++i) {
    if (!shape[i].is_number_unsigned() || shape[i].get<uint64_t>() < 1 ||
        shape[i].get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      graph_error("{}: shape[{}] must be an integer >= 1 (the IR has no empty tensors), got {}", where, i,
                  shape[i].dump());
    out.t.shape.dims[i] = static_cast<int64_t>(shape[i].get<uint64_t>());
  }
  int64_t numel = 0;
  if (!numel_checked(out.t.shape, numel)) graph_error("{}: shape {} overflows int64", where, shape.dump());
  const json& off = e["data_offsets"];
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
    graph_error("{}: data_offsets must be [begin, end], two non-negative integers", where);
  out.begin = off[0].get<uint64_t>();
  out.end = off[1].get<uint64_t>();
  if (out.end < out.begin || out.end - out.begin != static_cast<uint64_t>(numel) * 4)
    graph_error("{}: data_offsets [{}, {}] hold {} bytes, but shape {} of F32 needs {}", where, out.begin, out.end,
                out.end < out.begin ? 0 : out.end - out.begin, out.t.shape.str(), numel * 4);
  return out;
}

}  // namespace

std::string weights_to_safetensors(const Weights& w) {
  require_little_endian("weights_to_safetensors");
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  uint64_t offset = 0;
  for (const auto& [name, t] : w) {
    if (static_cast<int64_t>(t.data.size()) != t.shape.numel())
      graph_error("weights_to_safetensors: tensor '{}' holds {} floats, but its shape {} has {}", name, t.data.size(),
                  t.shape.str(), t.shape.numel());
    nlohmann::ordered_json shape = nlohmann::ordered_json::array();
    for (int i = 0; i < t.shape.rank; ++i) shape.push_back(t.shape[i]);
    const uint64_t bytes = t.data.size() * sizeof(float);
    header[name] = {{"dtype", "F32"}, {"shape", shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  // The data then starts 8-byte aligned, as the format recommends.
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');
  std::string out(8, '\0');
  uint64_t n = text.size();
  for (size_t i = 0; i < 8; ++i, n >>= 8) out[i] = static_cast<char>(n & 0xff);
  out += text;
  out.reserve(out.size() + offset);
  for (const auto& [name, t] : w) out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size() * sizeof(float));
  return out;
}

Weights weights_from_safetensors(const std::string& bytes, const std::string& source) {
  require_little_endian(source);
  if (bytes.size() < 8)
    graph_error("{}: is {} bytes; a safetensors file starts with an 8-byte header length", source, bytes.size());
  const uint64_t n = read_u64_le(bytes);
  if (n > kMaxHeaderBytes || n > bytes.size() - 8)
    graph_error("{}: its header length is {} bytes, but the file has {} after the length field{}; is it a "
                "safetensors file?", source, n, bytes.size() - 8, n > kMaxHeaderBytes ? " (and over 100 MiB)" : "");
  const std::string text = bytes.substr(8, static_cast<size_t>(n));
  json header;
  // A header is an object of tensors, each an object with a shape array, and an
  // optional object of metadata strings: 3 levels.
  constexpr int kMaxHeaderDepth = 3;
  const JsonIssue issue = parse_json_strict(text, kMaxHeaderDepth, header);
  switch (issue.kind) {
    case JsonIssue::Kind::none: break;
    case JsonIssue::Kind::duplicate_key:
      graph_error("{}: key {} is given twice in one object of the header; the file is damaged", source,
                  quote_name(issue.key));
    case JsonIssue::Kind::too_deep:
      graph_error("{}: the header nests more than {} levels deep at byte {} of it (a safetensors header needs {}); "
                  "the file is damaged or hostile", source, kMaxHeaderDepth, issue.byte, kMaxHeaderDepth);
    case JsonIssue::Kind::nul_byte:
      graph_error("{}: the header holds a NUL byte at byte {} of it; a header is JSON text (the file is damaged)",
                  source, issue.byte);
    case JsonIssue::Kind::byte_order_mark:
      graph_error("{}: the header starts with a byte-order mark, which JSON does not allow; the file is damaged",
                  source);
    case JsonIssue::Kind::syntax:
    case JsonIssue::Kind::out_of_range:
      graph_error("{}: the header is not valid JSON ({}); is it a safetensors file?", source,
                  printable_message(issue.detail, 240));
  }
  if (!header.is_object()) graph_error("{}: the header must be a JSON object of tensors", source);

  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    entries.push_back(parse_entry(source, it.key(), it.value()));
  }
  // The byte ranges must tile the data exactly: no overlaps (two tensors sharing
  // bytes), no gaps, nothing past the end.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  const uint64_t data_size = bytes.size() - 8 - n;
  uint64_t at = 0;
  for (const Entry& e : entries) {
    if (e.begin != at)
      graph_error("{}: tensor {} starts at byte {} of the data, expected {} ({}); the file is damaged", source,
                  quote_name(e.name), e.begin, at, e.begin < at ? "it overlaps the previous tensor" : "a gap before it");
    at = e.end;
  }
  if (at != data_size)
    graph_error("{}: the tensors cover {} bytes of data, but the file holds {}; the file is {}", source, at, data_size,
                at > data_size ? "truncated" : "damaged (bytes after the last tensor)");
  Weights out;
  const char* data = bytes.data() + 8 + n;
  for (Entry& e : entries) {
    e.t.data.resize(static_cast<size_t>(e.t.shape.numel()));
    std::memcpy(e.t.data.data(), data + e.begin, static_cast<size_t>(e.end - e.begin));
    out.emplace(e.name, std::move(e.t));
  }
  return out;
}

Weights load_weights_file(const std::string& path) {
  return weights_from_safetensors(
      read_regular_file(path, kMaxWeightsFileBytes, "a .safetensors weights file", "weights files are limited to 1 TiB"),
      printable_line(path, kMaxShownPathBytes));
}

Weights weights_of(const Graph& g) {
  Weights w;
  for (const ValueInfo& v : g.values)
    if (v.init.kind == ParamInit::Kind::data && v.init.data) w[v.name] = WeightTensor{v.shape, *v.init.data};
  return w;
}

void attach_weights(Graph& g, const Weights& w, const std::string& source) {
  std::set<std::string> used;
  std::vector<std::pair<size_t, const WeightTensor*>> plan;
  for (size_t i = 0; i < g.values.size(); ++i) {
    const ValueInfo& v = g.values[i];
    if (v.role != Role::parameter) continue;
    auto it = w.find(v.name);
    if (it == w.end())
      graph_error("{}: has no tensor for parameter {} {}; give the weights written for this graph", source,
                  quote_name(v.name), v.shape.str());
    if (it->second.shape != v.shape)
      graph_error("{}: tensor {} has shape {}, but the graph's parameter is {}", source, quote_name(v.name),
                  it->second.shape.str(), v.shape.str());
    used.insert(v.name);
    plan.emplace_back(i, &it->second);
  }
  for (const auto& [name, t] : w)
    if (!used.count(name))
      graph_error("{}: tensor {} {} is no parameter of the graph; give the weights written for this graph", source,
                  quote_name(name), t.shape.str());
  for (const auto& [i, t] : plan) {
    ParamInit init;
    init.kind = ParamInit::Kind::data;
    init.data = std::make_shared<const std::vector<float>>(t->data);
    g.values[i].init = std::move(init);
  }
}

void strip_weights(Graph& g) {
  for (ValueInfo& v : g.values)
    if (v.init.kind == ParamInit::Kind::data) v.init = ParamInit{};
}

}  // namespace tg
