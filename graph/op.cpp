#include "graph/op.h"

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
  }
  return "?";
}

}  // namespace tg
