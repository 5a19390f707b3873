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
  CHECK(error_of("abc").find("8-byte header length") != std::string::npos);
  CHECK(error_of(std::string(8, '\xff')).find("is it a safetensors file") != std::string::npos);
  CHECK(error_of(file_with("[1,2]", 0)).find("must be a JSON object") != std::string::npos);
  CHECK(error_of(file_with("{nope", 0)).find("not valid JSON") != std::string::npos);
  CHECK(error_of(file_with(R"({"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", 4)).find("dtype F16") !=
        std::string::npos);
  CHECK(error_of(file_with(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4)).find("needs 8") !=
        std::string::npos);
  CHECK(error_of(file_with(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}})", 0)).find("integer >= 1") !=
        std::string::npos);
  CHECK(error_of(file_with(R"({"a":{"dtype":"F32","shape":[1,1,1,1,1],"data_offsets":[0,4]}})", 4)).find("at most 4") !=
        std::string::npos);
  CHECK(error_of(file_with(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                           R"("b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4))
            .find("overlaps") != std::string::npos);
  CHECK(error_of(file_with(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8)).find("a gap") !=
        std::string::npos);
  CHECK(error_of(file_with(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4)).find("truncated") !=
        std::string::npos);
  CHECK(error_of(file_with(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 12)).find("after the last") !=
        std::string::npos);
  CHECK(error_of(file_with(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                           R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4))
            .find("given twice") != std::string::npos);
  CHECK(error_of(file_with(R"({"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,4]}})", 4))
            .find("overflows") != std::string::npos);
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
