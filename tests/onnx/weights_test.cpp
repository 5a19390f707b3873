// Weights files (graph/weights.h): the safetensors layout both ways, every damaged
// file refused with its reason, and weights that do not fit a graph never half applied.
#include <doctest/doctest.h>

#include <cstring>

#include "graph/builder.h"
#include "graph/errors.h"
#include "graph/init.h"
#include "graph/json_io.h"
#include "graph/weights.h"

namespace tg::testing {
namespace {

std::string error_of(const std::string& bytes) {
  try {
    weights_from_safetensors(bytes, "w.safetensors");
  } catch (const GraphError& e) {
    return e.what();
  }
  return "(read without an error)";
}

// A file with the given header text and data bytes.
std::string file_with(const std::string& header, size_t data_bytes) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (size_t i = 0; i < 8; ++i, n >>= 8) out[i] = static_cast<char>(n & 0xff);
  return out + header + std::string(data_bytes, '\0');
}

TEST_CASE("weights: safetensors round trip, the data 8-byte aligned, rank 0 read as shape (1)") {
  Weights w;
  w["a"] = WeightTensor{Shape{2, 3}, {1, 2, 3, 4, 5, 6}};
  w["b.c"] = WeightTensor{Shape{4}, {-1.5f, 0.0f, 3.25f, 1e-30f}};
  const std::string bytes = weights_to_safetensors(w);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
  CHECK((8 + n) % 8 == 0);
  const Weights back = weights_from_safetensors(bytes, "mem");
  REQUIRE(back.size() == 2);
  CHECK(back.at("a").shape == Shape{2, 3});
  CHECK(back.at("a").data == w["a"].data);
  CHECK(back.at("b.c").data == w["b.c"].data);
  const Weights scalar = weights_from_safetensors(
      file_with(R"({"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"__metadata__":{"by":"test"}})", 4), "mem");
  CHECK(scalar.at("s").shape == Shape{1});
}

TEST_CASE("weights: damaged or foreign files are refused with what is wrong") {
  const auto refused = [](const std::string& bytes, const std::string& fragment) {
    const std::string e = error_of(bytes);
    CHECK_MESSAGE(e.find(fragment) != std::string::npos, fragment, " not in: ", e);
  };
  refused("abc", "8-byte header length");
  refused(std::string(8, '\xff'), "is it a safetensors file");
  // header, bytes of data after it, and what the refusal must say
  const struct {
    const char* header;
    size_t data;
    const char* fragment;
  } files[] = {
      {"[1,2]", 0, "must be a JSON object"},
      {"{nope", 0, "not valid JSON"},
      {R"({"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", 4, "dtype F16"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4, "needs 8"},
      {R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}})", 0, "integer >= 1"},
      {R"({"a":{"dtype":"F32","shape":[1,1,1,1,1,1,1],"data_offsets":[0,4]}})", 4, "at most 6"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
       4, "overlaps"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8, "a gap"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4, "truncated"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 12, "after the last"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
       4, "given twice"},
      {R"({"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,4]}})", 4, "overflows"},
  };
  for (const auto& f : files) {
    CAPTURE(f.header);
    refused(file_with(f.header, f.data), f.fragment);
  }
}

TEST_CASE("weights: the header follows the project's one JSON policy (depth, NUL, byte-order mark)") {
  // 100,000 levels: refused by the flat scan before any parser recurses.
  const std::string deep = R"({"a":)" + std::string(100000, '[') + std::string(100000, ']') + "}";
  CHECK(error_of(file_with(deep, 0)).find("nests more than 3 levels deep") != std::string::npos);
  // A fourth level nowhere a header has one.
  CHECK(error_of(file_with(R"({"a":{"dtype":"F32","shape":[[1]],"data_offsets":[0,4]}})", 4))
            .find("nests more than 3 levels deep") != std::string::npos);
  // Text after a NUL would be ignored by a lenient parser.
  const std::string nul = std::string(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})") + '\0' + "junk";
  CHECK(error_of(file_with(nul, 4)).find("NUL byte at byte 54") != std::string::npos);
  CHECK(error_of(file_with("\xEF\xBB\xBF{}", 0)).find("byte-order mark") != std::string::npos);
  // A name with control bytes is quoted in the message, never printed raw.
  const std::string msg = error_of(file_with(R"({"\u001b[31mred":{"dtype":"F16","shape":[1],"data_offsets":[0,2]}})", 2));
  CHECK_MESSAGE(msg.find("dtype F16") != std::string::npos, msg);
  CHECK(msg.find('\x1b') == std::string::npos);
}

TEST_CASE("weights: attach gives every parameter its values, a mismatch changes nothing") {
  Graph g;
  RecordingBuilder b(g);
  const Value x = b.input("x", Shape{2, 3});
  const Value w = b.parameter("w", Shape{3, 2});
  b.mark_output(matmul(b, x, w));
  Weights good;
  good["w"] = WeightTensor{Shape{3, 2}, {1, 2, 3, 4, 5, 6}};
  for (const auto& [what, weights] :
       {std::pair<const char*, Weights>{"has no tensor for parameter 'w'", Weights{}},
        {"has shape [2,3], but the graph's parameter is [3,2]", Weights{{"w", WeightTensor{Shape{2, 3}, good["w"].data}}}},
        {"tensor 'extra' [1] is no parameter", Weights{{"w", good["w"]}, {"extra", WeightTensor{Shape{1}, {0}}}}}}) {
    CAPTURE(what);
    Graph copy = g;
    try {
      attach_weights(copy, weights, "w.safetensors");
      FAIL("attached");
    } catch (const GraphError& e) {
      CHECK(std::string(e.what()).find(what) != std::string::npos);
    }
    CHECK(copy.values[static_cast<size_t>(w.id)].init.kind == ParamInit::Kind::uniform);
  }
  attach_weights(g, good, "w.safetensors");
  const ValueInfo& v = g.values[static_cast<size_t>(w.id)];
  CHECK(v.init.kind == ParamInit::Kind::data);
  CHECK(initial_values(v, 123) == good["w"].data);  // given values ignore the seed
  CHECK(weights_of(g).at("w").data == good["w"].data);
  CHECK_THROWS_WITH_AS(save_graph_json(g), doctest::Contains("holds given values"), GraphError);
  strip_weights(g);
  CHECK(g.values[static_cast<size_t>(w.id)].init == ParamInit{});
  CHECK_NOTHROW(save_graph_json(g));
}

}  // namespace
}  // namespace tg::testing
