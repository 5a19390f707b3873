#pragma once
// An ONNX model as plain C++ values: what onnx_reader.cpp (the one file that
// sees the onnx protobuf classes, through libonnx's onnx_proto) reads out of a
// ModelProto, and what the importer (onnx_import.cpp) maps onto the IR. Keeping
// protobuf out of the importer lets it build, and its tests run, without libonnx.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/shape.h"

namespace tg::onnx {

// The IR dtype of an ONNX float element type: FLOAT (1, "float"), FLOAT16 (10,
// "float16") or BFLOAT16 (16, "bfloat16"); false for every other type.
inline bool onnx_float_dtype(int64_t onnx_type, DType& out) {
  switch (onnx_type) {
    case 1: out = DType::F32; return true;
    case 10: out = DType::F16; return true;
    case 16: out = DType::BF16; return true;
    default: return false;
  }
}
inline bool onnx_float_dtype(const std::string& type_name, DType& out) {
  if (type_name == "float") return onnx_float_dtype(1, out);
  if (type_name == "float16") return onnx_float_dtype(10, out);
  if (type_name == "bfloat16") return onnx_float_dtype(16, out);
  return false;
}
// The IR dtype of an ONNX element type a value may have: a float type above, or INT32
// (6, "int32") and INT64 (7, "int64"), the ids and labels (graph/dtype_rules.h).
inline bool onnx_value_dtype(int64_t onnx_type, DType& out) {
  if (onnx_type == 6) out = DType::I32;
  else if (onnx_type == 7) out = DType::I64;
  else return onnx_float_dtype(onnx_type, out);
  return true;
}
inline bool onnx_value_dtype(const std::string& type_name, DType& out) {
  if (type_name == "int32") return onnx_value_dtype(6, out);
  if (type_name == "int64") return onnx_value_dtype(7, out);
  return onnx_float_dtype(type_name, out);
}

// A constant tensor: an initializer, or a Constant node's value. Integer types
// are widened to int64 and float64 narrowed to float; others keep their type name
// and fail where they are used.
struct Tensor {
  enum class Type { f32, i64, other };
  std::string name;
  std::vector<int64_t> dims;   // rank 0 is a scalar
  Type type = Type::f32;
  std::string type_name = "float";  // the ONNX element type, for messages
  std::vector<float> f;        // Type::f32: float, double, float16 and bfloat16 values, widened exactly
  DType dtype = DType::F32;    // Type::f32: the IR dtype a parameter made of it gets (f16, bf16 or f32)
  std::vector<int64_t> i;      // Type::i64
  bool external = false;       // data in an external file (not read)
};

struct Attribute {
  enum class Kind { i, f, s, ints, floats, tensor, other };
  Kind kind = Kind::other;
  int64_t i = 0;
  float f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  Tensor t;
};

struct Node {
  std::string name, op_type, domain;
  std::vector<std::string> inputs, outputs;  // "" for an omitted optional input
  std::map<std::string, Attribute> attrs;
};

struct Dim {
  int64_t value = -1;  // >= 0 when known
  std::string param;   // the symbolic name otherwise ("batch")
};

struct ValueDecl {
  std::string name;
  std::string elem_type = "float";  // ONNX element type name
  bool has_shape = false;
  std::vector<Dim> dims;
};

struct OpsetImport {
  std::string domain;  // "" for the default domain (the file's "ai.onnx" too)
  int64_t version = 0;
};

struct Model {
  int64_t opset = 0;  // of the default domain ("" / ai.onnx)
  // Every opset_import of the file, as written: check_model refuses a domain given
  // twice, which `opset` alone cannot show. Empty for models built in memory.
  std::vector<OpsetImport> opset_imports;
  std::string producer;
  std::vector<ValueDecl> inputs, outputs;
  std::map<std::string, Tensor> initializers;
  std::vector<Node> nodes;  // in the file's (topological) order
  // The real paths of the external data files the reader took bytes from, once each:
  // inputs too, which no output of import may overwrite.
  std::vector<std::string> external_files;
};

// Reads and parses FILE. Throws GraphError for a file that is not an ONNX model,
// and, in a build without libonnx, always: "this build has no ONNX support; ...".
Model read_model_file(const std::string& path);
// The same for a model's bytes already in memory; `path` names it in messages and its
// folder is where external data is looked for.
Model read_model_bytes(const std::string& bytes, const std::string& path);
// Whether this build can read ONNX files.
bool have_onnx_reader();

}  // namespace tg::onnx
