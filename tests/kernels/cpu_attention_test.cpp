// The fused attention ops on the CPU (graph/attention.h): the output and the gradients of
// q, k and v equal those of the unfused graph softmax(scale q k^T + mask) v, with the heads
// split by reshape and transpose and the mask an additive input (causal, the padding mask of
// key lengths, both); a fully masked row gives zeros, never NaN; and the row statistic's
// pair keeps a 16-bit graph's statistic to about f32's precision.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "graph/attention.h"
#include "graph/autodiff.h"
#include "graph/builder.h"
#include "graph/dtype_rules.h"
#include "graph/errors.h"
#include "kernels/interpreter.h"
#include "tests/kernels/kernel_test_util.h"

using namespace tg;
using namespace tg::testing;

namespace {

struct Dims {
  int64_t B, S, H, dh;
  int64_t D() const { return H * dh; }
};

// One graph with both forms over the same q, k, v and target, each with its mse loss and
// the gradients of its loss with respect to q, k and v.
struct TwoForms {
  Graph g;
  Value q, k, v, mask, lengths, target, fused, unfused;
  std::vector<Value> fused_grads, unfused_grads;
};

// padded: the fused op takes key lengths (its padding mask), an i32 input.
void build(TwoForms& t, const Dims& d, bool causal, bool padded = false) {
  RecordingBuilder b(t.g);
  const Shape view{d.B, d.S, d.D()};
  t.q = b.input("q", view);
  t.k = b.input("k", view);
  t.v = b.input("v", view);
  t.mask = b.input("mask", Shape{d.B * d.H, d.S, d.S});
  if (padded) t.lengths = b.input("lengths", Shape{d.B}, DType::I32);
  t.target = b.input("target", view);
  const float alpha = 1.0f / std::sqrt(static_cast<float>(d.dh));
  t.fused = attention(b, t.q, t.k, t.v, d.H, alpha, causal, t.lengths);
  const std::array<int, kMaxRank> swap12{{0, 2, 1, 3}};
  auto split = [&](const Value& x) {
    return reshape(b, transpose(b, reshape(b, x, Shape{d.B, d.S, d.H, d.dh}), swap12), Shape{d.B * d.H, d.S, d.dh});
  };
  const Value scores = add(b, scale(b, matmul(b, split(t.q), split(t.k), false, true), alpha), t.mask);
  const Value ctx = matmul(b, softmax(b, scores), split(t.v));
  t.unfused = reshape(b, transpose(b, reshape(b, ctx, Shape{d.B, d.H, d.S, d.dh}), swap12), view);
  const Value fused_loss = mse_loss(b, t.fused, t.target);
  const Value unfused_loss = mse_loss(b, t.unfused, t.target);
  const std::vector<TapeEntry> tape = tape_from_graph(t.g);
  t.fused_grads = backward(b, tape, fused_loss, {t.q, t.k, t.v});
  t.unfused_grads = backward(b, tape, unfused_loss, {t.q, t.k, t.v});
}

// The additive mask of the unfused form: -1e30 where a key is masked (causal, or at or past
// the sequence's length).
void fill_mask(std::vector<float>& mask, const Dims& d, bool causal, const std::vector<int64_t>& lengths) {
  for (int64_t m = 0; m < d.B * d.H; ++m)
    for (int64_t i = 0; i < d.S; ++i)
      for (int64_t j = 0; j < d.S; ++j) {
        const bool masked = (causal && j > i) || j >= lengths[static_cast<size_t>(m / d.H)];
        mask[static_cast<size_t>((m * d.S + i) * d.S + j)] = masked ? -1e30f : 0.0f;
      }
}

// The fused form's output and gradients against the unfused one's.
void check_forms_agree(const TwoForms& t, const std::vector<std::vector<float>>& values) {
  auto at = [&](const Value& x) { return values[static_cast<size_t>(x.id)]; };
  check_close(at(t.fused), at(t.unfused), 1e-6, 1e-5, "output");
  const char* names[] = {"dq", "dk", "dv"};
  for (size_t i = 0; i < 3; ++i) {
    REQUIRE(t.fused_grads[i].valid());
    check_close(at(t.fused_grads[i]), at(t.unfused_grads[i]), 1e-6, 1e-4, names[i]);
  }
}

}  // namespace

TEST_CASE("attention equals the unfused softmax(scale q k^T + mask) v graph, output and gradients") {
  for (const bool causal : {false, true})
    for (const Dims d : {Dims{2, 7, 2, 5}, Dims{1, 12, 3, 4}}) {
      CAPTURE(causal);
      CAPTURE(d.S);
      TwoForms t;
      build(t, d, causal);
      std::vector<std::vector<float>> values = make_values(t.g, 7);
      fill_mask(values[static_cast<size_t>(t.mask.id)], d, causal, std::vector<int64_t>(static_cast<size_t>(d.B), d.S));
      interpret(t.g, values);
      auto at = [&](const Value& x) { return values[static_cast<size_t>(x.id)]; };
      check_forms_agree(t, values);
      // Causal attention is not the unmasked one: the mask reaches the result.
      if (causal) {
        TwoForms open;
        build(open, d, false);
        std::vector<std::vector<float>> ov = make_values(open.g, 7);
        interpret(open.g, ov);
        CHECK_FALSE(bitwise_equal(ov[static_cast<size_t>(open.fused.id)], at(t.fused)));
      }
    }
}

TEST_CASE("attention with key lengths equals the unfused graph with the padding mask, alone and with causal") {
  for (const bool causal : {false, true})
    for (const Dims d : {Dims{3, 7, 2, 5}, Dims{2, 12, 3, 4}}) {
      CAPTURE(causal);
      CAPTURE(d.S);
      TwoForms t;
      build(t, d, causal, true);
      std::vector<std::vector<float>> values = make_values(t.g, 9);
      // Every length from 1 (one real key) to S (no padding), so that no row is fully masked.
      std::vector<int64_t> lengths;
      for (int64_t b = 0; b < d.B; ++b) lengths.push_back(b == 0 ? 1 : b == 1 ? d.S : d.S / 2);
      fill_mask(values[static_cast<size_t>(t.mask.id)], d, causal, lengths);
      values[static_cast<size_t>(t.lengths.id)].assign(lengths.begin(), lengths.end());
      interpret(t.g, values);
      auto at = [&](const Value& x) { return values[static_cast<size_t>(x.id)]; };
      check_forms_agree(t, values);
      // The padded keys reach nothing: dk and dv are 0 at their rows.
      const std::vector<float> dk = at(t.fused_grads[1]), dv = at(t.fused_grads[2]);
      for (int64_t b = 0; b < d.B; ++b)
        for (int64_t j = lengths[static_cast<size_t>(b)]; j < d.S; ++j)
          for (int64_t e = 0; e < d.D(); ++e) {
            const size_t idx = static_cast<size_t>((b * d.S + j) * d.D() + e);
            CHECK(dk[idx] == 0.0f);
            CHECK(dv[idx] == 0.0f);
          }
    }
}

TEST_CASE("attention with a key length of 0 gives rows of zeros and zero gradients, never NaN") {
  const Dims d{2, 6, 2, 4};
  for (const bool causal : {false, true}) {
    CAPTURE(causal);
    TwoForms t;
    build(t, d, causal, true);
    std::vector<std::vector<float>> values = make_values(t.g, 11);
    values[static_cast<size_t>(t.lengths.id)] = {0.0f, 4.0f};
    interpret(t.g, values);
    auto at = [&](const Value& x) { return values[static_cast<size_t>(x.id)]; };
    const int64_t per_sequence = d.S * d.D();
    const std::vector<float> out = at(t.fused);
    for (int64_t e = 0; e < per_sequence; ++e) CHECK(out[static_cast<size_t>(e)] == 0.0f);
    bool second_nonzero = false;
    for (int64_t e = per_sequence; e < 2 * per_sequence; ++e) second_nonzero |= out[static_cast<size_t>(e)] != 0.0f;
    CHECK(second_nonzero);
    for (size_t i = 0; i < 3; ++i) {
      const std::vector<float> grad = at(t.fused_grads[i]);
      for (int64_t e = 0; e < per_sequence; ++e) CHECK(grad[static_cast<size_t>(e)] == 0.0f);
      for (float x : grad) CHECK(std::isfinite(x));
    }
  }
}

TEST_CASE("attention's key lengths must be one integer per sequence, named in the refusal") {
  Attrs at;
  at.heads.count = 2;
  const Shape v{2, 5, 8};
  CHECK(shape_rule_message(OpKind::attention, {v, v, v, {2}}, at, "a") == "accepted");
  CHECK(shape_rule_message(OpKind::attention, {v, v, v, {3}}, at, "a").find("the key lengths (last input) are [3] but "
                                                                            "must be [2]") != std::string::npos);
  CHECK(shape_rule_message(OpKind::attention_grad, {v, v, v, v, v, {4, 5, 2}, {2}}, at, "a") == "accepted");
  CHECK_THROWS_WITH_AS(infer_dtype(OpKind::attention, {DType::F32, DType::F32, DType::F32, DType::F32}, at, "'a'"),
                       doctest::Contains("attention 'a': input 3 (the key lengths) is f32; key lengths are integers"),
                       GraphError);
}

TEST_CASE("attention's shape rule refuses q, k, v of different shapes, heads that do not divide, a bad lse") {
  Attrs at;
  at.heads.count = 2;
  CHECK(shape_rule_message(OpKind::attention, {{2, 5, 8}, {2, 5, 8}, {2, 5, 8}}, at, "a") == "accepted");
  CHECK(shape_rule_message(OpKind::attention, {{2, 5, 8}, {2, 6, 8}, {2, 6, 8}}, at, "a").find("one shape") !=
        std::string::npos);
  at.heads.count = 3;
  CHECK(shape_rule_message(OpKind::attention, {{2, 5, 8}, {2, 5, 8}, {2, 5, 8}}, at, "a").find("multiple of heads") !=
        std::string::npos);
  at.heads.count = 0;
  CHECK(shape_rule_message(OpKind::attention_lse, {{2, 5, 8}, {2, 5, 8}}, at, "a").find("heads.count is not set") !=
        std::string::npos);
  at.heads.count = 2;
  const Shape v{2, 5, 8};
  CHECK(shape_rule_message(OpKind::attention_grad, {v, v, v, v, v, {4, 5, 2}}, at, "a") == "accepted");
  CHECK(shape_rule_message(OpKind::attention_grad, {v, v, v, v, v, {4, 5}}, at, "a").find("attention_lse's output") !=
        std::string::npos);
}

TEST_CASE("attention_lse in bf16 and f16 keeps the statistic as hi + lo, far closer than one 16-bit number") {
  const Shape view{1, 9, 8};
  Attrs at;
  at.heads.count = 2;
  at.alpha = 3.0f;  // statistics of a few units, where one bf16 ulp is 2^-6 or more
  const Tensor q = random_tensor(view, 1), k = random_tensor(view, 2);
  const Shape lse_shape{2, 9, 2};
  for (const DType dt : {DType::BF16, DType::F16}) {
    const std::string dtype_label = dtype_name(dt);
    CAPTURE(dtype_label);
    // The inputs in dt, and the f32 statistic of those rounded inputs.
    Tensor q16 = q, k16 = k;
    for (float& x : q16.data) x = round_to_dtype(x, dt);
    for (float& x : k16.data) x = round_to_dtype(x, dt);
    const Tensor want = run_op(OpKind::attention_lse, {q16, k16}, at);
    std::vector<uint16_t> qb(q16.data.size()), kb(k16.data.size()), ob(static_cast<size_t>(lse_shape.numel()));
    store_as_dtype(q16.data.data(), qb.size(), dt, qb.data());
    store_as_dtype(k16.data.data(), kb.size(), dt, kb.data());
    kernels::OpCall c;
    c.op = OpKind::attention_lse;
    c.attrs = &at;
    c.num_inputs = 2;
    c.in[0] = {reinterpret_cast<float*>(qb.data()), view, dt};
    c.in[1] = {reinterpret_cast<float*>(kb.data()), view, dt};
    c.out = {reinterpret_cast<float*>(ob.data()), lse_shape, dt};
    kernels::run_cpu(c);
    std::vector<float> pairs(ob.size());
    load_from_dtype(ob.data(), ob.size(), dt, pairs.data());
    double worst_pair = 0, worst_hi = 0;
    for (size_t r = 0; r < pairs.size() / 2; ++r) {
      const double lse = want.data[2 * r];
      worst_pair = std::max(worst_pair, std::fabs(static_cast<double>(pairs[2 * r]) + pairs[2 * r + 1] - lse));
      worst_hi = std::max(worst_hi, std::fabs(static_cast<double>(pairs[2 * r]) - lse));
      CHECK(pairs[2 * r] == round_to_dtype(static_cast<float>(lse), dt));
    }
    CHECK(worst_hi > 0);
    // lo is the rest, rounded once: its own ulp, 2^-8 (bf16) of |lo| <= half an ulp of hi.
    CHECK(worst_pair <= worst_hi * 0x1p-7);
  }
}
