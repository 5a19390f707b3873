// The convolutional ops of the import on models built by hand: what they cannot express
// refused with the reason, and weights of a real network's size imported, including a
// weight the import computes (folded), within ImportOptions::max_fold_bytes. The
// mapping's numbers are checked against onnxruntime by the cnn_* fixtures
// (onnx_reference_test.cpp).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "kernels/interpreter.h"
#include "tests/onnx/onnx_model_builder.h"

namespace tg::testing {
namespace {

bool refused_with(const ModelBuilder& mb, const std::string& fragment, const onnx::ImportOptions& o = {}) {
  const std::string msg = refusal(mb, o);
  INFO(msg);
  return msg.find(fragment) != std::string::npos;
}

ModelBuilder pool(const char* op, std::map<std::string, Attribute> attrs) {
  ModelBuilder mb;
  mb.input("x", {1, 2, 6, 6}).node(op, {"x"}, {"y"}, std::move(attrs)).output("y");
  return mb;
}

TEST_CASE("onnx cnn: what the IR's convolutions, pools and batch norm cannot do is refused, naming why") {
  CHECK(refused_with(pool("AveragePool", {{"kernel_shape", aints({3, 3})}, {"pads", aints({1, 1, 1, 1})},
                                          {"count_include_pad", ai(1)}}),
                     "count_include_pad = 1 with padding"));
  CHECK(refused_with(pool("MaxPool", {{"kernel_shape", aints({2, 2})}, {"dilations", aints({2, 2})}}),
                     "dilation 1 only"));
  CHECK(refused_with(pool("MaxPool", {{"kernel_shape", aints({2, 2})}, {"pads", aints({2, 0, 0, 0})}}),
                     "is not smaller than the window's"));
  CHECK(refused_with(pool("MaxPool", {{"kernel_shape", aints({2})}}), "kernel_shape [2] does not give the window"));
  CHECK(refused_with(pool("MaxPool", {{"kernel_shape", aints({2, 2})}, {"auto_pad", as("SAME")}}),
                     "auto_pad \"SAME\""));
  CHECK(refused_with(pool("MaxPool", {}), "has no attribute 'kernel_shape'"));

  ModelBuilder rank2;  // Conv over no spatial axis
  rank2.input("x", {2, 3}).init("w", {1, 3}, {1, 2, 3}).node("Conv", {"x", "w"}, {"y"}).output("y");
  CHECK(refused_with(rank2, "input X is [2,3] of rank 2; twograph convolves and pools NCHW"));
  ModelBuilder groups;
  groups.input("x", {1, 3, 4, 4}).init("w", {2, 1, 1, 1}, {1, 2}).node("Conv", {"x", "w"}, {"y"}, {{"group", ai(2)}});
  groups.output("y");
  CHECK(refused_with(groups, "not a multiple of groups = 2"));
  ModelBuilder kernel;
  kernel.input("x", {1, 1, 4, 4}).init("w", {1, 1, 3, 3}, std::vector<float>(9, 1.0f));
  kernel.node("Conv", {"x", "w"}, {"y"}, {{"kernel_shape", aints({2, 2})}}).output("y");
  CHECK(refused_with(kernel, "kernel_shape [2,2] differs from the weight's spatial dims [3,3]"));

  auto bn = [](std::map<std::string, Attribute> attrs) {
    ModelBuilder mb;
    mb.input("x", {2, 3, 2, 2});
    for (const char* p : {"g", "b", "m", "v"}) mb.init(p, {3}, {1, 1, 1});
    mb.node("BatchNormalization", {"x", "g", "b", "m", "v"}, {"y"}, std::move(attrs)).output("y");
    return mb;
  };
  CHECK(refused_with(bn({{"training_mode", ai(1)}}), "export the model after model.eval()"));
  CHECK(refused_with(bn({{"epsilon", af(0.0f)}}), "epsilon 0 must be > 0"));
  ModelBuilder sum;
  sum.input("a", {2, 3}).input("b", {3}).node("Sum", {"a", "b"}, {"y"}).output("y");
  CHECK(refused_with(sum, "inputs of one shape"));

  auto convt = [](std::map<std::string, Attribute> attrs) {
    ModelBuilder mb;
    mb.input("x", {1, 2, 3, 3}).init("w", {2, 1, 3, 3}, std::vector<float>(18, 0.5f));
    mb.node("ConvTranspose", {"x", "w"}, {"y"}, std::move(attrs)).output("y");
    return mb;
  };
  // Stride 2 makes 7 x 7 at the most: 8 would need padding the output.
  CHECK(refused_with(convt({{"strides", aints({2, 2})}, {"output_shape", aints({8, 8})}}),
                     "more than the 7 the transposed convolution makes"));
  CHECK(refused_with(convt({{"strides", aints({2, 2})}, {"output_padding", aints({2, 0})}}),
                     "output_padding[0] = 2 must be >= 0 and below the stride 2"));
  CHECK(refused_with(convt({{"output_shape", aints({3})}}), "does not give the output's 2 spatial extents"));
  ModelBuilder lrn;
  lrn.input("x", {2, 3}).node("LRN", {"x"}, {"y"}, {{"size", ai(3)}}).output("y");
  CHECK(refused_with(lrn, "LRN normalizes over the channels"));
  ModelBuilder clip;
  clip.input("x", {2, 3}).input("lo", {1}).node("Clip", {"x", "lo"}, {"y"}).output("y");
  CHECK(refused_with(clip, "its min bound is not a constant scalar"));
}

TEST_CASE("onnx cnn: ConvTranspose's output_shape and SAME_UPPER give ONNX's pads, ReLU6 clips exactly") {
  auto pads_of = [](std::map<std::string, Attribute> attrs) {
    ModelBuilder mb;
    mb.input("x", {1, 1, 3, 3}).init("w", {1, 1, 3, 3}, std::vector<float>(9, 1.0f));
    mb.node("ConvTranspose", {"x", "w"}, {"y"}, std::move(attrs)).output("y");
    const Graph g = mb.import();
    for (const Node& n : g.nodes)
      if (n.op == OpKind::conv_transpose2d) return n.attrs.conv.pads;
    return std::array<int, 4>{{-1, -1, -1, -1}};
  };
  // Full extent (3 - 1) 2 + 3 = 7; asked 6: one pad, at the beginning unless SAME_UPPER.
  CHECK(pads_of({{"strides", aints({2, 2})}, {"output_shape", aints({6, 6})}}) == std::array<int, 4>{{1, 1, 0, 0}});
  CHECK(pads_of({{"strides", aints({2, 2})}, {"auto_pad", as("SAME_UPPER")}}) == std::array<int, 4>{{0, 0, 1, 1}});
  CHECK(pads_of({{"strides", aints({2, 2})}, {"auto_pad", as("SAME_LOWER")}}) == std::array<int, 4>{{1, 1, 0, 0}});

  ModelBuilder relu6;
  relu6.input("x", {1, 6}).init("lo", {}, {0.0f}).init("hi", {}, {6.0f});
  relu6.node("Clip", {"x", "lo", "hi"}, {"y"}).output("y");
  const Graph g = relu6.import();
  std::vector<std::vector<float>> values = make_values(g, 0);
  values[static_cast<size_t>(g.find_value("x"))] = {-3.0f, 0.1f, 5.999999f, 6.0f, 7.3f, 1.0e6f};
  interpret(g, values);
  CHECK(values[static_cast<size_t>(g.find_value("y"))] == std::vector<float>{0.0f, 0.1f, 5.999999f, 6.0f, 6.0f, 6.0f});
}

TEST_CASE("onnx cnn: batch norm's running statistics become one 2 x C parameter, and the output follows them") {
  ModelBuilder mb;
  mb.input("x", {1, 2, 1, 2}).init("g", {2}, {2, 1}).init("b", {2}, {0.5f, 0}).init("m", {2}, {1, -1});
  mb.init("v", {2}, {4, 0.25f});
  mb.node("BatchNormalization", {"x", "g", "b", "m", "v"}, {"y"}, {{"epsilon", af(1e-6f)}}).output("y");
  const Graph g = mb.import();
  const int stats = g.find_value("y.stats");
  REQUIRE(stats >= 0);
  CHECK(g.values[static_cast<size_t>(stats)].shape == Shape{2, 2});
  CHECK(*g.values[static_cast<size_t>(stats)].init.data == std::vector<float>{1, -1, 4, 0.25f});
  std::vector<std::vector<float>> values = make_values(g, 0);
  values[static_cast<size_t>(g.find_value("x"))] = {3, 5, 0, -2};
  interpret(g, values);
  const std::vector<float>& y = values[static_cast<size_t>(g.find_value("y"))];
  // (x - mean) / sqrt(var + eps) * gamma + beta, per channel
  const float want[4] = {0.5f + 2 * 2 / 2.0f, 0.5f + 2 * 4 / 2.0f, 1 / 0.5f, -1 / 0.5f};
  for (size_t i = 0; i < 4; ++i) CHECK(y[i] == doctest::Approx(want[i]).epsilon(1e-5));
}

// A weight just over 2^24 elements (64 MiB), built in memory: as big as the import must
// take from a real network's classifier, small enough for a test. Scaled by a constant
// in the model, so the import computes it (a folded constant), not only reads it.
TEST_CASE("onnx cnn: a weight-sized constant the model computes imports, within the limit the user sets") {
  const int64_t in = 4096, out = 4097;
  std::vector<float> w(static_cast<size_t>(in * out), 0.0f);
  for (int64_t j = 0; j < out; ++j) w[static_cast<size_t>((j % in) * out + j)] = 1.0f;  // column j reads x[j % in]
  ModelBuilder mb;
  mb.input("x", {1, in}).init("w", {in, out}, std::move(w)).init("two", {}, {2.0f});
  mb.node("Mul", {"w", "two"}, {"w2"}).node("MatMul", {"x", "w2"}, {"y"}).output("y");
  const Graph g = mb.import();
  std::vector<std::vector<float>> values = make_values(g, 0);
  std::vector<float> x(static_cast<size_t>(in));
  for (int64_t i = 0; i < in; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i % 7) - 3.0f;
  values[static_cast<size_t>(g.find_value("x"))] = x;
  interpret(g, values);
  const std::vector<float>& y = values[static_cast<size_t>(g.find_value("y"))];
  REQUIRE(y.size() == static_cast<size_t>(out));
  size_t wrong = 0;
  for (int64_t j = 0; j < out; ++j) wrong += y[static_cast<size_t>(j)] != 2.0f * x[static_cast<size_t>(j % in)];
  CHECK(wrong == 0);

  onnx::ImportOptions small;
  small.max_fold_bytes = int64_t{32} << 20;
  CHECK(refused_with(mb, "node 'n0' (Mul): folding it would make a constant of shape [4096,4097], over the 8388608 "
                         "elements left", small));
  // A constant the model asks for that no machine holds is refused before it is allocated.
  ModelBuilder huge;
  huge.input("x", {2, 3}).ints("shape", {int64_t{1} << 30, int64_t{1} << 20}).node("ConstantOfShape", {"shape"}, {"c"});
  huge.node("Add", {"x", "c"}, {"y"}).output("y");
  CHECK(refused_with(huge, "raise it (tg-graph import --max-fold-mib)"));
}

}  // namespace
}  // namespace tg::testing
