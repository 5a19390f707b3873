#include "graph/ew_program.h"

#include <fmt/format.h>

#include <utility>

namespace tg {

const char* ew_op_name(EwOp op) {
  switch (op) {
    case EwOp::add: return "add";
    case EwOp::sub: return "sub";
    case EwOp::mul: return "mul";
    case EwOp::scale: return "scale";
    case EwOp::relu: return "relu";
    case EwOp::relu_grad: return "relu_grad";
    case EwOp::gelu: return "gelu";
    case EwOp::gelu_grad: return "gelu_grad";
    case EwOp::tanh: return "tanh";
    case EwOp::tanh_grad: return "tanh_grad";
    case EwOp::sigmoid: return "sigmoid";
    case EwOp::sigmoid_grad: return "sigmoid_grad";
    case EwOp::exp: return "exp";
    case EwOp::log: return "log";
    case EwOp::log_grad: return "log_grad";
    case EwOp::gelu_erf: return "gelu_erf";
    case EwOp::gelu_erf_grad: return "gelu_erf_grad";
    case EwOp::cast: return "cast";
  }
  return "?";
}

bool parse_ew_op(const std::string& name, EwOp& out) {
  for (int i = 0; i < kNumEwOps; ++i)
    if (name == ew_op_name(static_cast<EwOp>(i))) {
      out = static_cast<EwOp>(i);
      return true;
    }
  return false;
}

bool ew_op_binary(EwOp op) {
  switch (op) {
    case EwOp::add:
    case EwOp::sub:
    case EwOp::mul:
    case EwOp::relu_grad:
    case EwOp::gelu_grad:
    case EwOp::tanh_grad:
    case EwOp::sigmoid_grad:
    case EwOp::log_grad:
    case EwOp::gelu_erf_grad: return true;
    case EwOp::scale:
    case EwOp::relu:
    case EwOp::gelu:
    case EwOp::tanh:
    case EwOp::sigmoid:
    case EwOp::exp:
    case EwOp::log:
    case EwOp::gelu_erf:
    case EwOp::cast: return false;
  }
  return false;
}

bool EwInstr::operator==(const EwInstr& o) const {
  // alpha only matters to scale, to to cast, b to the binary ops; compare what the op reads.
  if (op != o.op || a != o.a) return false;
  if (ew_op_binary(op) && b != o.b) return false;
  if (op == EwOp::cast && to != o.to) return false;
  return op != EwOp::scale || alpha == o.alpha;
}

namespace {
std::string known_ops() {
  std::string s;
  for (int i = 0; i < kNumEwOps; ++i) s += (i ? ", " : "") + std::string(ew_op_name(static_cast<EwOp>(i)));
  return s;
}
}  // namespace

std::string ew_program_error(const EwProgram& p, int inputs) {
  if (inputs < 1 || inputs > kMaxEwInputs)
    return fmt::format("has {} inputs; a fused program reads 1 to {} (split the chain)", inputs, kMaxEwInputs);
  if (p.size() < 1 || p.size() > kMaxEwInstrs)
    return fmt::format("program has {} instructions; give 1 to {} (split longer chains)", p.size(), kMaxEwInstrs);
  unsigned read = 0;  // bit j: input j is read
  for (int k = 0; k < p.size(); ++k) {
    const EwInstr& in = p.code[static_cast<size_t>(k)];
    if (static_cast<int>(in.op) >= kNumEwOps)
      return fmt::format("instruction {}: opcode {} is not an op; known: {}", k, static_cast<int>(in.op),
                         known_ops());
    if (in.op == EwOp::cast && (!dtype_is_known(in.to) || dtype_is_int(in.to)))
      return fmt::format("instruction {} (cast): to = {} is not a float dtype; a program casts to f32, bf16 or f16", k,
                         dtype_is_known(in.to) ? dtype_name(in.to) : fmt::format("#{}", static_cast<int>(in.to)));
    const int nops = ew_op_binary(in.op) ? 2 : 1;
    const int operands[2] = {in.a, in.b};
    int reads_previous = 0;
    for (int j = 0; j < nops; ++j) {
      const int v = operands[j];
      if (v < inputs) {
        read |= 1u << v;
        continue;
      }
      if (k > 0 && v == inputs + k - 1) {
        ++reads_previous;
        continue;
      }
      return fmt::format("instruction {} ({}): operand {} is {}; operands are the inputs 0..{}{}", k,
                         ew_op_name(in.op), j, v, inputs - 1,
                         k > 0 ? fmt::format(" and the previous result {} (a program is a chain)", inputs + k - 1)
                               : std::string(" (the first instruction reads inputs only)"));
    }
    if (k > 0 && reads_previous == 0)
      return fmt::format("instruction {} ({}) does not read the previous result {}; in a chain each instruction does",
                         k, ew_op_name(in.op), inputs + k - 1);
  }
  for (int j = 0; j < inputs; ++j)
    if (!((read >> j) & 1u)) return fmt::format("input {} is never read; remove it from the node's inputs", j);
  return "";
}

std::string ew_program_dtypes(const EwProgram& p, const std::vector<DType>& inputs, std::vector<DType>* results) {
  const int nin = static_cast<int>(inputs.size());
  std::string err = ew_program_error(p, nin);
  if (!err.empty()) return err;
  DType low = DType::F32;  // the one 16-bit dtype of the program, once one is seen
  auto one_low = [&low](DType d, const std::string& what) -> std::string {
    if (d == DType::F32) return "";
    if (low == DType::F32 || low == d) {
      low = d;
      return "";
    }
    return fmt::format("{} is {} but the program already has {} values; a program holds f32 and one of bf16 and "
                       "f16: split it at the cast between them",
                       what, dtype_name(d), dtype_name(low));
  };
  for (int j = 0; j < nin; ++j) {
    const DType d = inputs[static_cast<size_t>(j)];
    if (!dtype_is_known(d) || dtype_is_int(d))
      return fmt::format("input {} is {}; a program reads f32, bf16 or f16 (cast integers to f32 first)", j,
                         dtype_is_known(d) ? dtype_name(d) : fmt::format("#{}", static_cast<int>(d)));
    if (!(err = one_low(d, fmt::format("input {}", j))).empty()) return err;
  }
  std::vector<DType> out(p.code.size());
  auto dtype_of = [&](int v) { return v < nin ? inputs[static_cast<size_t>(v)] : out[static_cast<size_t>(v - nin)]; };
  for (int k = 0; k < p.size(); ++k) {
    const EwInstr& in = p.code[static_cast<size_t>(k)];
    const DType a = dtype_of(in.a);
    if (ew_op_binary(in.op) && dtype_of(in.b) != a)
      return fmt::format("instruction {} ({}) reads operand {} ({}) and operand {} ({}); both operands of an op have "
                         "one dtype: cast one of them first",
                         k, ew_op_name(in.op), in.a, dtype_name(a), in.b, dtype_name(dtype_of(in.b)));
    out[static_cast<size_t>(k)] = in.op == EwOp::cast ? in.to : a;
    if (!(err = one_low(out[static_cast<size_t>(k)], fmt::format("instruction {} (cast)", k))).empty()) return err;
  }
  if (results) *results = std::move(out);
  return "";
}

}  // namespace tg
