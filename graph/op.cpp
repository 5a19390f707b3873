#include "graph/op.h"

namespace tg {

namespace {
struct OpInfo {
  const char* name;
  int inputs;
  int outputs;
};
constexpr OpInfo kOps[] = {
#define TG_OP_INFO(name, nin, nout) {#name, nin, nout},
    TG_OP_LIST(TG_OP_INFO)
#undef TG_OP_INFO
};
}  // namespace

const char* op_name(OpKind op) { return kOps[static_cast<int>(op)].name; }
int op_num_inputs(OpKind op) { return kOps[static_cast<int>(op)].inputs; }
int op_num_outputs(OpKind op) { return kOps[static_cast<int>(op)].outputs; }

bool parse_op(const std::string& name, OpKind& out) {
  for (int i = 0; i < kNumOps; ++i) {
    if (name == kOps[i].name) {
      out = static_cast<OpKind>(i);
      return true;
    }
  }
  return false;
}

}  // namespace tg
