#include "graph/op.h"

#include <fmt/format.h>

#include "graph/enum_names.h"

namespace tg {

bool parse_op(const std::string& name, OpKind& out) {
  for (int i = 0; i < kNumOps; ++i) {
    if (name == op_table::kTraits[i].name) {
      out = static_cast<OpKind>(i);
      return true;
    }
  }
  return false;
}

std::string op_arity_text(OpKind op) {
  const int k = op_num_inputs(op);
  const char* flag = op_can_be_guarded(op)                                   ? " (and one more, last: the found-inf flag)"
                     : (op_traits(op).flags & op_table::kKeyLengths) != 0 ? " (and one more, last: the key lengths)"
                                                                          : "";
  if (op_is_variadic(op)) return k == 1 ? "one or more inputs" : fmt::format("a multiple of {} inputs{}", k, flag);
  return fmt::format("{} input{}{}", k, k == 1 ? "" : "s", flag);
}

namespace {
constexpr const char* kActNames[] = {"none", "relu", "gelu"};  // in Act's order
}  // namespace

const char* act_name(Act a) { return enum_name(kActNames, a); }
bool parse_act(const std::string& s, Act& out) { return parse_enum(kActNames, s, out); }

const char* attr_name(AttrId a) {
  switch (a) {
    case AttrId::trans_a: return "trans_a";
    case AttrId::trans_b: return "trans_b";
    case AttrId::axis: return "axis";
    case AttrId::size: return "size";
    case AttrId::eps: return "eps";
    case AttrId::alpha: return "alpha";
    case AttrId::value: return "value";
    case AttrId::lr: return "lr";
    case AttrId::momentum: return "momentum";
    case AttrId::in_place: return "in_place";
    case AttrId::shape: return "shape";
    case AttrId::perm: return "perm";
    case AttrId::act: return "act";
    case AttrId::program: return "program";
    case AttrId::heads: return "heads";
    case AttrId::to: return "to";
    case AttrId::conv: return "conv";
    case AttrId::start: return "start";
    case AttrId::growth_factor: return "growth_factor";
    case AttrId::backoff_factor: return "backoff_factor";
    case AttrId::growth_interval: return "growth_interval";
    case AttrId::adam: return "adam";
    case AttrId::max_norm: return "max_norm";
    case AttrId::causal: return "causal";
    case AttrId::ignore_index: return "ignore_index";
    case AttrId::p: return "p";
    case AttrId::rng_stream: return "rng_stream";
    case AttrId::channels_last: return "channels_last";
  }
  return "?";
}

}  // namespace tg
