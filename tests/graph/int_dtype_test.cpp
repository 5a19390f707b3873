// Integer tensors (i32, i64) in the IR: their names and sizes, graph files, which ops take
// them (graph/dtype_rules.h) and the errors of the others, and autodiff stopping at them.
#include <doctest/doctest.h>

#include <string>

#include "graph/autodiff.h"
#include "graph/builder.h"
#include "graph/dropout.h"
#include "graph/dtype_rules.h"
#include "graph/errors.h"
#include "graph/init.h"
#include "graph/json_io.h"
#include "graph/precision.h"
#include "graph/text_dump.h"
#include "graph/validate.h"

namespace {

using namespace tg;

// tokens[2,3] i64 -> embedding(table[10,4]) -> reshape [6,4] -> cross_entropy(labels[6] i32).
struct TokenModel {
  Graph g;
  Value ids, labels, table, emb, loss;
  explicit TokenModel(int64_t ignore_index = -100) {
    RecordingBuilder b(g);
    ids = b.input("ids", {2, 3}, DType::I64);
    labels = b.input("labels", {6}, DType::I32);
    table = b.parameter("table", {10, 4});
    emb = embedding(b, table, ids);
    const Value flat = reshape(b, emb, Shape{6, 4});
    loss = cross_entropy(b, flat, labels, ignore_index);
    b.mark_output(loss);
  }
};

}  // namespace

TEST_CASE("int dtypes: names, sizes, parsing") {
  CHECK(std::string(dtype_name(DType::I32)) == "i32");
  CHECK(std::string(dtype_name(DType::I64)) == "i64");
  CHECK(dtype_size(DType::I32) == 4);
  CHECK(dtype_size(DType::I64) == 8);
  DType d{};
  CHECK(parse_dtype("i64", d));
  CHECK(d == DType::I64);
  CHECK(parse_dtype("i32", d));
  CHECK(d == DType::I32);
  CHECK_FALSE(parse_dtype("int64", d));
  CHECK(dtype_is_int(DType::I32));
  CHECK_FALSE(dtype_is_int(DType::F16));
  CHECK(dtype_suffix(DType::I64) == " i64");
}

TEST_CASE("int dtypes: a token model is valid, and its graph file keeps the dtypes and ignore_index") {
  TokenModel m(0);
  CHECK(validation_errors(m.g).empty());
  CHECK(m.emb.shape == Shape{2, 3, 4});
  CHECK(m.emb.dtype == DType::F32);
  const std::string text = save_graph_json(m.g);
  CHECK(text.find("\"i64\"") != std::string::npos);
  CHECK(text.find("\"i32\"") != std::string::npos);
  CHECK(text.find("\"ignore_index\":0") != std::string::npos);
  const Graph back = load_graph_json(text, "round trip");
  CHECK(back.values[static_cast<size_t>(back.find_value("ids"))].dtype == DType::I64);
  CHECK(back.values[static_cast<size_t>(back.find_value("labels"))].dtype == DType::I32);
  CHECK(back.nodes.back().attrs.ignore_index == 0);
  CHECK(save_graph_json(back) == text);
  // The default ignore_index (-100, torch's) is not written.
  TokenModel d;
  CHECK(save_graph_json(d.g).find("ignore_index") == std::string::npos);
  CHECK(text_dump(m.g).find("ids[2,3] i64") != std::string::npos);
}

TEST_CASE("int dtypes: ops other than the layout ops, cast and the ids' readers refuse integers, naming node and op") {
  Graph g;
  RecordingBuilder b(g);
  const Value ids = b.input("ids", {6}, DType::I64);
  const Value x = b.input("x", {6});
  CHECK_THROWS_WITH_AS(b.apply(OpKind::add, {ids, ids}, {}, "sum_ids"),
                       doctest::Contains("add 'sum_ids': input 0 is i64, an integer; add takes float values only"),
                       GraphError);
  CHECK_THROWS_WITH_AS(b.apply(OpKind::relu, {ids}, {}, "r"), doctest::Contains("cast the value to f32 first"),
                       GraphError);
  CHECK_THROWS_WITH_AS(b.apply(OpKind::mul, {x, ids}, {}, "m"), doctest::Contains("input 1 is i64, an integer"),
                       GraphError);
  const Value table = b.parameter("table", {10, 4});
  CHECK_THROWS_WITH_AS(b.apply(OpKind::embedding, {table, x}, {}, "e"),
                       doctest::Contains("embedding 'e': input 1 (the ids) is f32; ids are integers"), GraphError);
  const Value int_logits = b.input("logits", {6, 5}, DType::I32);
  CHECK_THROWS_WITH_AS(b.apply(OpKind::cross_entropy, {int_logits, ids}, {}, "ce"),
                       doctest::Contains("input 0 is i32, an integer; cross_entropy takes float values only"),
                       GraphError);
  // What takes them: the layout ops, cast both ways, the ids and labels.
  const Value r = reshape(b, ids, Shape{2, 3});
  CHECK(r.dtype == DType::I64);
  Attrs take;
  take.axis = 0;
  take.start = 1;
  take.size = 2;
  CHECK(b.apply(OpKind::slice, {ids}, take).dtype == DType::I64);
  Attrs along;
  along.axis = 0;
  CHECK(b.apply(OpKind::concat, {ids, ids}, along).shape == Shape{12});
  CHECK(copy(b, ids).dtype == DType::I64);
  CHECK(cast(b, ids, DType::F32).dtype == DType::F32);
  CHECK(cast(b, x, DType::I32).dtype == DType::I32);
  CHECK_THROWS_WITH_AS(b.apply(OpKind::concat, {ids, cast(b, ids, DType::I32)}, along),
                       doctest::Contains("input 1 is i32 but input 0 is i64"), GraphError);
}

TEST_CASE("int dtypes: a graph file with an integer into add fails validation naming the node") {
  const std::string text = R"({"format": "twograph-graph", "version": 1,
    "inputs": [{"name": "ids", "shape": [4], "dtype": "i64"}],
    "nodes": [{"name": "twice", "op": "add", "inputs": ["ids", "ids"]}],
    "outputs": ["twice"]})";
  CHECK_THROWS_WITH_AS(load_graph_json(text, "f"), doctest::Contains("add 'twice': input 0 is i64, an integer"),
                       GraphError);
}

TEST_CASE("int dtypes: a parameter may not be an integer") {
  Graph g;
  RecordingBuilder b(g);
  const Value x = b.input("x", {3});
  b.mark_output(relu(b, x));
  g.values[0].role = Role::parameter;
  g.values[0].dtype = DType::I64;
  bool found = false;
  for (const std::string& e : validation_errors(g)) found = found || e.find("integers are data") != std::string::npos;
  CHECK(found);
}

TEST_CASE("int dtypes: autodiff gives the table embedding_grad and never differentiates through an integer") {
  TokenModel m;
  RecordingBuilder b(m.g);
  const std::vector<TapeEntry> tape = tape_from_graph(m.g);
  const std::vector<Value> grads = backward(b, tape, m.loss, {m.table, m.ids, m.labels});
  REQUIRE(grads.size() == 3);
  REQUIRE(grads[0].valid());
  CHECK(grads[0].shape == Shape{10, 4});
  CHECK(m.g.nodes[static_cast<size_t>(m.g.values[static_cast<size_t>(grads[0].id)].producer)].op ==
        OpKind::embedding_grad);
  CHECK_FALSE(grads[1].valid());
  CHECK_FALSE(grads[2].valid());

  // x -> cast to i32 -> cast to f32 -> loss: the path through the integer carries no gradient.
  Graph g;
  RecordingBuilder r(g);
  const Value x = r.parameter("x", {4});
  const Value y = r.parameter("y", {4});
  const Value back = cast(r, cast(r, x, DType::I32), DType::F32);
  const Value loss = mse_loss(r, add(r, back, y), r.input("t", {4}));
  const std::vector<Value> gx = backward(r, tape_from_graph(g), loss, {x, y});
  CHECK_FALSE(gx[0].valid());
  CHECK(gx[1].valid());
}

TEST_CASE("int dtypes: autocast leaves ids and labels integers") {
  Graph g;
  RecordingBuilder inner(g);
  AutocastBuilder b(inner, Precision::bf16);
  const Value logits = b.input("logits", {6, 5});
  const Value labels = b.input("labels", {6}, DType::I64);
  const Value loss = cross_entropy(b, logits, labels);
  CHECK(loss.dtype == DType::F32);
  for (const Node& n : g.nodes) CHECK(n.op != OpKind::cast);
}

TEST_CASE("int dtypes: autocast leaves where's condition alone, an f32 mask keeping a bf16 where in bf16") {
  Graph g;
  RecordingBuilder inner(g);
  AutocastBuilder b(inner, Precision::bf16);
  const Value x = cast(b, b.input("x", {3, 4}), DType::BF16);
  const Value y = cast(b, b.input("y", {3, 4}), DType::BF16);
  for (const DType mask_dtype : {DType::F32, DType::I32}) {
    const Value picked = where(b, b.input(std::string("mask_") + dtype_name(mask_dtype), {3, 4}, mask_dtype), x, y);
    CHECK(picked.dtype == DType::BF16);
  }
  int casts = 0;
  for (const Node& n : g.nodes) casts += n.op == OpKind::cast;
  CHECK(casts == 2);  // x's and y's own
}

TEST_CASE("int dtypes: dropout's rng state is i64 training state from the seed, and eval mode emits no dropout") {
  Graph g;
  RecordingBuilder b(g);
  const Value x = b.input("x", {3, 5});
  const Value y = dropout(b, x, 0.25f, 2);
  b.mark_output(y);
  const int rng = g.find_value(kRngStateName);
  REQUIRE(rng >= 0);
  const ValueInfo& r = g.values[static_cast<size_t>(rng)];
  CHECK(r.dtype == DType::I64);
  CHECK(r.role == Role::optimizer_state);
  CHECK(r.shape == Shape{2});
  CHECK(validation_errors(g).empty());
  CHECK(initial_values(r, 7) == std::vector<float>{7.0f, 0.0f});
  CHECK(initial_values(r, (uint64_t{1} << 24) + 5) == std::vector<float>{5.0f, 0.0f});  // modulo 2^24
  // The init, p and rng_stream survive a graph file.
  const Graph back = load_graph_json(save_graph_json(g), "saved");
  const ValueInfo& rb = back.values[static_cast<size_t>(back.find_value(kRngStateName))];
  CHECK(rb.init == r.init);
  CHECK(rb.dtype == DType::I64);
  const Node& d = back.nodes[static_cast<size_t>(back.find_node(g.nodes[0].name))];
  CHECK(d.attrs.p == 0.25f);
  CHECK(d.attrs.rng_stream == 2);
  // No gradient reaches the rng state; x's is the same dropout of dy.
  const Value loss = reduce_sum(b, reduce_sum(b, y, 1), 0);
  const std::vector<Value> grads = backward(b, tape_from_graph(g), loss, {x, RecordingBuilder::handle(g, rng)});
  CHECK(grads[0].valid());
  CHECK(!grads[1].valid());
  const Node& dx = g.nodes[static_cast<size_t>(g.values[static_cast<size_t>(grads[0].id)].producer)];
  CHECK(dx.op == OpKind::dropout);
  CHECK(dx.inputs[1] == rng);
  CHECK(dx.attrs.p == 0.25f);
  CHECK(dx.attrs.rng_stream == 2);

  Graph e;
  RecordingBuilder eb(e);
  eb.set_eval(true);
  const Value ex = eb.input("x", {3, 5});
  CHECK(dropout(eb, ex, 0.25f, 0).id == ex.id);
  CHECK(e.nodes.empty());
  CHECK(e.find_value(kRngStateName) < 0);
}
