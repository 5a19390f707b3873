// The ONNX file reader: libonnx's generated protobuf classes (onnx_proto) parse
// the file; everything is copied out into tg::onnx's plain structs, checked on
// the way (element counts that overflow, raw data of the wrong size), so that
// nothing after this file trusts the file.
#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "graph/errors.h"
#include "graph/float_formats.h"
#include "graph/quote.h"
#include "graph/file_read.h"
#include "tools/tg-graph/onnx_model.h"

namespace tg::onnx {

namespace {

namespace pb = ::onnx;

// protobuf cannot parse a message over 2 GiB; larger models keep their weights in external files.
constexpr uintmax_t kMaxModelBytes = (uintmax_t{1} << 31) - 1;

std::string type_name(int t) {
  if (!pb::TensorProto_DataType_IsValid(t)) return "type " + std::to_string(t);
  std::string s = pb::TensorProto_DataType_Name(static_cast<pb::TensorProto_DataType>(t));
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

template <typename T>
void from_raw(const std::string& raw, int64_t n, std::vector<T>& out, const std::string& where) {
  if (raw.size() != static_cast<size_t>(n) * sizeof(T))
    graph_error("{}: raw_data holds {} bytes, but {} elements of {} bytes need {}", where, raw.size(), n, sizeof(T),
                static_cast<size_t>(n) * sizeof(T));
  out.resize(static_cast<size_t>(n));
  if (n > 0) std::memcpy(out.data(), raw.data(), raw.size());
}

template <typename Field>
void check_count(const Field& f, int64_t n, const std::string& where) {
  if (f.size() != n) graph_error("{}: holds {} values, but its dims give {} elements", where, f.size(), n);
}

// External data (the dynamo exporter writes weights beside the model): a byte range
// of a file in the model's folder. Model archives and checkouts carry symbolic links,
// so the location is resolved to its real path, and anything that leads outside the
// folder is refused, whatever its text says. Only the tensor's own bytes are read: a
// data file may be far larger than the tensors it holds (or sparse).
class ExternalData {
 public:
  explicit ExternalData(const std::string& model_path) : model_(model_path) {}
  const std::vector<std::string>& files() const { return files_; }

  std::string bytes(const pb::TensorProto& t, const std::string& where, uint64_t expected) {
    std::string location;
    uint64_t offset = 0, length = 0;
    bool has_length = false;
    for (const auto& kv : t.external_data()) {
      if (kv.key() == "location") location = kv.value();
      else if (kv.key() == "offset") offset = parse(kv.value(), where, "offset");
      else if (kv.key() == "length") {
        length = parse(kv.value(), where, "length");
        has_length = true;
      }
    }
    if (has_length && length != expected)
      graph_error("{}: its external data length {} is not the {} bytes its dims and type need", where, length, expected);
    const std::string path = resolve(location, where);
    if (std::find(files_.begin(), files_.end(), path) == files_.end()) files_.push_back(path);
    std::ifstream in(path, std::ios::binary);
    if (!in) graph_error("{}: cannot open its external data file {} for reading; check its permissions", where, path);
    std::error_code ec;
    const uintmax_t size = std::filesystem::file_size(path, ec);
    if (ec) graph_error("{}: cannot read the size of its external data file {}: {}", where, path, ec.message());
    if (offset > size || expected > size - offset)
      graph_error("{}: its external data [{}, +{}) runs past the end of {} ({} bytes)", where, offset, expected, path,
                  size);
    std::string data(static_cast<size_t>(expected), '\0');
    in.seekg(static_cast<std::streamoff>(offset));
    in.read(data.data(), static_cast<std::streamsize>(expected));
    if (!in || in.gcount() != static_cast<std::streamsize>(expected))
      graph_error("{}: read {} of the {} bytes of its external data in {}", where, in.gcount(), expected, path);
    return data;
  }

 private:
  // The real path of `location`, which must be a regular file inside the model's folder
  // once every symbolic link on the way is followed.
  std::string resolve(const std::string& location, const std::string& where) const {
    namespace fs = std::filesystem;
    const fs::path rel(location);
    if (location.empty() || rel.is_absolute())
      graph_error("{}: its external data location {} must be a file name relative to the model", where,
                  quote_name(location));
    std::error_code ec;
    const fs::path folder = fs::canonical(fs::absolute(model_, ec).parent_path(), ec);
    if (ec) graph_error("{}: cannot resolve the model's folder: {}", where, ec.message());
    const fs::path named = folder / rel;
    const fs::path real = fs::canonical(named, ec);
    if (ec == std::errc::too_many_symbolic_link_levels)
      graph_error("{}: its external data location {} is a loop of symbolic links", where, quote_name(location));
    if (ec == std::errc::no_such_file_or_directory)
      graph_error("{}: its external data file {} does not exist; keep it beside the model", where, named.string());
    if (ec)
      graph_error("{}: cannot resolve its external data location {}: {}", where, quote_name(location), ec.message());
    const auto [f, r] = std::mismatch(folder.begin(), folder.end(), real.begin(), real.end());
    if (f != folder.end())
      graph_error("{}: its external data location {} leads outside the model's folder (to {}); external data must "
                  "be a file in the folder of the model",
                  where, quote_name(location), real.string());
    if (!fs::is_regular_file(real, ec))
      graph_error("{}: its external data location {} is not a regular file", where, quote_name(location));
    return real.string();
  }

  static uint64_t parse(const std::string& v, const std::string& where, const char* key) {
    char* end = nullptr;
    errno = 0;
    const unsigned long long x = std::strtoull(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || v[0] == '-' || !std::isdigit(static_cast<unsigned char>(v[0])) || errno == ERANGE)
      graph_error("{}: external data {} {} is not a byte count", where, key, quote_name(v));
    return x;
  }
  std::string model_;
  std::vector<std::string> files_;  // the real paths read, in first-use order
};

// Bytes per element in raw_data for the types read here; 0 for the others.
uint64_t raw_element_bytes(int type) {
  switch (type) {
    case pb::TensorProto_DataType_FLOAT: case pb::TensorProto_DataType_INT32: return 4;
    case pb::TensorProto_DataType_DOUBLE: case pb::TensorProto_DataType_INT64: return 8;
    case pb::TensorProto_DataType_BOOL: return 1;
    case pb::TensorProto_DataType_FLOAT16: case pb::TensorProto_DataType_BFLOAT16: return 2;
    default: return 0;
  }
}

Tensor read_tensor(const pb::TensorProto& t, const std::string& where_prefix, ExternalData* ext) {
  Tensor out;
  out.name = t.name();
  const std::string where = where_prefix + " '" + t.name() + "'";
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d < 0) graph_error("{}: has a negative dim {}", where, d);
    if (d > 0 && n > std::numeric_limits<int64_t>::max() / 8 / d) graph_error("{}: its element count overflows", where);
    n *= d;
    out.dims.push_back(d);
  }
  out.type_name = type_name(t.data_type());
  std::string external;
  const bool is_external = t.data_location() == pb::TensorProto_DataLocation_EXTERNAL;
  if (is_external) {
    if (!ext) {
      out.external = true;
      out.type = Tensor::Type::other;
      return out;
    }
    const uint64_t element = raw_element_bytes(t.data_type());
    if (element == 0) {
      out.type = Tensor::Type::other;
      return out;
    }
    external = ext->bytes(t, where, static_cast<uint64_t>(n) * element);
  }
  const bool raw = is_external || t.has_raw_data();
  const std::string& raw_bytes = is_external ? external : t.raw_data();
  switch (t.data_type()) {
    case pb::TensorProto_DataType_FLOAT:
      out.type = Tensor::Type::f32;
      if (raw) from_raw(raw_bytes, n, out.f, where);
      else {
        check_count(t.float_data(), n, where);
        out.f.assign(t.float_data().begin(), t.float_data().end());
      }
      break;
    case pb::TensorProto_DataType_DOUBLE: {
      out.type = Tensor::Type::f32;
      std::vector<double> d;
      if (raw) from_raw(raw_bytes, n, d, where);
      else {
        check_count(t.double_data(), n, where);
        d.assign(t.double_data().begin(), t.double_data().end());
      }
      // Narrowed to f32, a double past FLT_MAX would turn into an inf weight.
      for (size_t k = 0; k < d.size(); ++k)
        if (std::isfinite(d[k]) && std::fabs(d[k]) > static_cast<double>(std::numeric_limits<float>::max()))
          graph_error("{}: element {} is {}, beyond the range of f32 (the IR computes in f32, at most {}); scale the "
                      "values into range", where, k, d[k], std::numeric_limits<float>::max());
      out.f.assign(d.begin(), d.end());
      break;
    }
    case pb::TensorProto_DataType_FLOAT16:
    case pb::TensorProto_DataType_BFLOAT16: {  // widened exactly; the dtype goes with the values
      const bool half = t.data_type() == pb::TensorProto_DataType_FLOAT16;
      out.type = Tensor::Type::f32;
      out.dtype = half ? DType::F16 : DType::BF16;
      std::vector<uint16_t> bits;
      if (raw) from_raw(raw_bytes, n, bits, where);
      else {  // one 16-bit pattern per element of int32_data
        check_count(t.int32_data(), n, where);
        for (int32_t b : t.int32_data()) {
          if (b < 0 || b > 0xFFFF) graph_error("{}: int32_data holds {}, not a 16-bit pattern", where, b);
          bits.push_back(static_cast<uint16_t>(b));
        }
      }
      for (uint16_t b : bits) out.f.push_back(half ? f32_from_f16(b) : f32_from_bf16(b));
      break;
    }
    case pb::TensorProto_DataType_INT64:
      out.type = Tensor::Type::i64;
      if (raw) from_raw(raw_bytes, n, out.i, where);
      else {
        check_count(t.int64_data(), n, where);
        out.i.assign(t.int64_data().begin(), t.int64_data().end());
      }
      break;
    case pb::TensorProto_DataType_INT32: {
      out.type = Tensor::Type::i64;
      std::vector<int32_t> d;
      if (raw) from_raw(raw_bytes, n, d, where);
      else {
        check_count(t.int32_data(), n, where);
        d.assign(t.int32_data().begin(), t.int32_data().end());
      }
      out.i.assign(d.begin(), d.end());
      break;
    }
    case pb::TensorProto_DataType_BOOL: {  // one byte each in raw_data, else in int32_data
      out.type = Tensor::Type::i64;
      if (raw) {
        std::vector<uint8_t> d;
        from_raw(raw_bytes, n, d, where);
        out.i.assign(d.begin(), d.end());
      } else {
        check_count(t.int32_data(), n, where);
        out.i.assign(t.int32_data().begin(), t.int32_data().end());
      }
      break;
    }
    default: out.type = Tensor::Type::other; break;
  }
  return out;
}

Attribute read_attribute(const pb::AttributeProto& a, const std::string& where) {
  Attribute out;
  switch (a.type()) {
    case pb::AttributeProto_AttributeType_INT: out.kind = Attribute::Kind::i; out.i = a.i(); break;
    case pb::AttributeProto_AttributeType_FLOAT: out.kind = Attribute::Kind::f; out.f = a.f(); break;
    case pb::AttributeProto_AttributeType_STRING: out.kind = Attribute::Kind::s; out.s = a.s(); break;
    case pb::AttributeProto_AttributeType_INTS:
      out.kind = Attribute::Kind::ints;
      out.ints.assign(a.ints().begin(), a.ints().end());
      break;
    case pb::AttributeProto_AttributeType_FLOATS:
      out.kind = Attribute::Kind::floats;
      out.floats.assign(a.floats().begin(), a.floats().end());
      break;
    case pb::AttributeProto_AttributeType_TENSOR:
      out.kind = Attribute::Kind::tensor;
      out.t = read_tensor(a.t(), where + " attribute " + a.name() + ": tensor", nullptr);
      break;
    default: out.kind = Attribute::Kind::other; break;
  }
  return out;
}

ValueDecl read_decl(const pb::ValueInfoProto& v) {
  ValueDecl d;
  d.name = v.name();
  if (!v.type().has_tensor_type()) {
    d.elem_type = "a non-tensor type";
    return d;
  }
  const auto& tt = v.type().tensor_type();
  d.elem_type = type_name(tt.elem_type());
  d.has_shape = tt.has_shape();
  for (const auto& dim : tt.shape().dim()) {
    Dim x;
    if (dim.has_dim_value()) x.value = dim.dim_value();
    else x.param = dim.dim_param().empty() ? std::string("?") : dim.dim_param();
    d.dims.push_back(x);
  }
  return d;
}

}  // namespace

bool have_onnx_reader() { return true; }

Model read_model_file(const std::string& path) {
  return read_model_bytes(read_regular_file(path, kMaxModelBytes, "an .onnx model file",
                                            "protobuf reads at most 2 GiB; save larger models with external data"),
                          path);
}

Model read_model_bytes(const std::string& bytes, const std::string& path) {
  pb::ModelProto m;
  if (!m.ParseFromString(bytes))
    graph_error("{}: is not an ONNX model (the protobuf parser rejected it); give a .onnx file", path);
  if (!m.has_graph()) graph_error("{}: the model has no graph", path);
  Model out;
  out.producer = m.producer_name() + (m.producer_version().empty() ? "" : " " + m.producer_version());
  for (const auto& o : m.opset_import()) {
    const std::string domain = o.domain() == "ai.onnx" ? "" : o.domain();
    out.opset_imports.push_back(OpsetImport{domain, o.version()});
    if (domain.empty()) out.opset = o.version();
  }
  const pb::GraphProto& g = m.graph();
  if (g.sparse_initializer_size() > 0)
    graph_error("{}: has sparse initializers, which twograph does not read; export dense weights", path);
  ExternalData ext(path);
  for (const auto& t : g.initializer()) {
    Tensor x = read_tensor(t, path + ": initializer", &ext);
    if (out.initializers.count(x.name)) graph_error("{}: initializer {} is given twice", path, quote_name(x.name));
    out.initializers.emplace(x.name, std::move(x));
  }
  out.external_files = ext.files();
  for (const auto& v : g.input())
    if (!out.initializers.count(v.name())) out.inputs.push_back(read_decl(v));  // IR < 4 lists initializers as inputs
  for (const auto& v : g.output()) out.outputs.push_back(read_decl(v));
  for (const auto& n : g.node()) {
    Node x;
    x.name = n.name();
    x.op_type = n.op_type();
    x.domain = n.domain() == "ai.onnx" ? "" : n.domain();
    x.inputs.assign(n.input().begin(), n.input().end());
    x.outputs.assign(n.output().begin(), n.output().end());
    const std::string where = fmt::format("{}: node {} ({})", path, quote_name(n.name()), n.op_type());
    for (const auto& a : n.attribute())
      if (!x.attrs.emplace(a.name(), read_attribute(a, where)).second)
        graph_error("{}: attribute {} is given twice; give each attribute once", where, quote_name(a.name()));
    out.nodes.push_back(std::move(x));
  }
  return out;
}

}  // namespace tg::onnx
