// The elementwise pass: a chain of elementwise ops, where each value between two of them
// is read by the next op alone (and is no graph output), becomes one fused_elementwise
// node: one kernel reads the chain's inputs once and writes its result once, and the
// values between never go to memory. Its program (graph/ew_program.h) lists the ops in
// chain order; each rounds as its own kernel does, so the fused node gives the chain's
// bits on every backend.
//
// The chain ops: add, sub, mul, scale, bias_add (an add whose bias input is a [cols] row),
// relu, relu_grad, gelu, gelu_grad, tanh, sigmoid, exp, log, gelu_erf and their
// gradients, copy (no instruction: its result is its input), and cast between f32 and one
// of bf16 and f16 (PassOptions::elementwise_casts): autocast puts one between each bf16
// GEMM and the f32 residual add or gradient sum it feeds, which then read the GEMM's
// output in one kernel. A cast rounds in the program as the cast kernel does, so a chain
// across dtypes keeps the bits; a chain whose values would be bf16 and f16 ends before the
// second 16-bit dtype, which no program holds (graph/ew_program.h). A parameter's cast is
// left to the low_copies pass.
// Chains are found in schedule order from their first op; one fused node holds at most
// kMaxEwInstrs instructions and kMaxEwInputs distinct inputs, and a longer chain goes on
// in the next node. Every value of a chain has the chain's output shape.
#include <algorithm>
#include <iterator>
#include <optional>
#include <vector>

#include "static/passes/pass.h"
#include "static/passes/rewrite.h"

namespace tg {

namespace {

// The chain ops and the instruction each becomes (bias_add is an add whose b is the
// [cols] row). copy is a chain op too, with no instruction: its result is its input.
struct ChainOp {
  OpKind op;
  EwOp ew;
};
constexpr ChainOp kChainOps[] = {
    {OpKind::add, EwOp::add},
    {OpKind::bias_add, EwOp::add},
    {OpKind::sub, EwOp::sub},
    {OpKind::mul, EwOp::mul},
    {OpKind::scale, EwOp::scale},
    {OpKind::relu, EwOp::relu},
    {OpKind::relu_grad, EwOp::relu_grad},
    {OpKind::gelu, EwOp::gelu},
    {OpKind::gelu_grad, EwOp::gelu_grad},
    {OpKind::tanh, EwOp::tanh},
    {OpKind::tanh_grad, EwOp::tanh_grad},
    {OpKind::sigmoid, EwOp::sigmoid},
    {OpKind::sigmoid_grad, EwOp::sigmoid_grad},
    {OpKind::exp, EwOp::exp},
    {OpKind::log, EwOp::log},
    {OpKind::log_grad, EwOp::log_grad},
    {OpKind::gelu_erf, EwOp::gelu_erf},
    {OpKind::gelu_erf_grad, EwOp::gelu_erf_grad},
    {OpKind::cast, EwOp::cast},
};

const ChainOp* chain_entry(OpKind op) {
  const auto it = std::find_if(std::begin(kChainOps), std::end(kChainOps), [op](const ChainOp& c) { return c.op == op; });
  return it == std::end(kChainOps) ? nullptr : it;
}

bool chain_op(OpKind op) { return op == OpKind::copy || chain_entry(op) != nullptr; }

// A fused node being built: its inputs (source value ids), and its instructions with
// operands as (is a result, index), numbered for the program once the inputs are known.
class Chain {
 public:

  // Whether node n (reading the chain's value `cur` unless it is the first) fits.
  bool fits(const Node& n, int cur) const {
    int instrs = static_cast<int>(code_.size()) + (n.op == OpKind::copy ? 0 : 1);
    std::vector<int> ins = inputs_;
    for (int v : n.inputs)
      if (v != cur && std::find(ins.begin(), ins.end(), v) == ins.end()) ins.push_back(v);
    return instrs <= kMaxEwInstrs && static_cast<int>(ins.size()) <= kMaxEwInputs;
  }

  // Appends node n; `cur` is the chain's value it reads (-1 for the first node).
  void append(int id, const Node& n, int cur) {
    nodes_.push_back(id);
    if (n.op == OpKind::copy) {  // the chain's value is now the copy's input
      if (cur < 0) value_ = operand_of(n.inputs[0], -1);
      return;
    }
    Step s;
    s.op = chain_entry(n.op)->ew;  // n fits the chain, and is no copy
    s.alpha = n.attrs.alpha;
    s.to = n.attrs.to;
    s.a = operand_of(n.inputs[0], cur);
    if (n.inputs.size() > 1) s.b = operand_of(n.inputs[1], cur);
    code_.push_back(s);
    value_ = {true, static_cast<int>(code_.size()) - 1};
  }

  const std::vector<int>& nodes() const { return nodes_; }
  int instructions() const { return static_cast<int>(code_.size()); }
  const std::vector<int>& inputs() const { return inputs_; }

  EwProgram program() const {
    EwProgram p;
    p.code.resize(code_.size());
    const int nin = static_cast<int>(inputs_.size());
    auto index = [nin](Operand o) { return static_cast<uint8_t>(o.result ? nin + o.index : o.index); };
    for (size_t k = 0; k < code_.size(); ++k) {
      EwInstr& in = p.code[k];
      in.op = code_[k].op;
      in.a = index(code_[k].a);
      in.b = ew_op_binary(in.op) ? index(code_[k].b) : 0;
      in.alpha = in.op == EwOp::scale ? code_[k].alpha : 1.0f;
      in.to = in.op == EwOp::cast ? code_[k].to : DType::F32;
    }
    return p;
  }

 private:
  struct Operand {
    bool result = false;
    int index = 0;  // an input's position, or an instruction's
  };
  struct Step {
    EwOp op = EwOp::add;
    Operand a, b;
    float alpha = 1.0f;
    DType to = DType::F32;
  };

  // The chain's value where v is the value the chain carries, else v as an input.
  Operand operand_of(int v, int cur) {
    if (v == cur && cur >= 0) return value_;
    auto it = std::find(inputs_.begin(), inputs_.end(), v);
    if (it == inputs_.end()) {
      inputs_.push_back(v);
      return {false, static_cast<int>(inputs_.size()) - 1};
    }
    return {false, static_cast<int>(it - inputs_.begin())};
  }

  std::vector<int> nodes_;
  std::vector<int> inputs_;
  std::vector<Step> code_;
  Operand value_;
};

}  // namespace

Graph pass_elementwise(const Graph& g, const PassOptions& opt) {
  GraphRewrite rw(g);
  const std::vector<int> order = g.topo_order();
  std::vector<bool> taken(g.nodes.size(), false);
  auto shape_of = [&](int v) -> const Shape& { return g.values[static_cast<size_t>(v)].shape; };
  auto dtype_of = [&](int v) { return g.values[static_cast<size_t>(v)].dtype; };
  // A copy of integers (ids) is no float program's.
  auto is_int = [&](int v) { return dtype_is_int(dtype_of(v)); };
  // The 16-bit dtype node n reads or writes, F32 where it has none; nullopt where it has
  // both bf16 and f16 (a cast from one to the other), which no program holds.
  auto low_of = [&](const Node& n) -> std::optional<DType> {
    DType low = DType::F32;
    std::vector<int> vs = n.inputs;
    vs.push_back(n.outputs[0]);
    for (int v : vs) {
      const DType d = dtype_of(v);
      if (d == DType::F32 || dtype_is_int(d)) continue;
      if (low != DType::F32 && low != d) return std::nullopt;
      low = d;
    }
    return low;
  };
  auto one_low = [](DType a, DType b) { return a == DType::F32 || b == DType::F32 || a == b; };
  // A parameter's cast stays for the low_copies pass, which makes it a persistent copy.
  auto chain_node = [&](const Node& n) {
    if (!chain_op(n.op) || is_int(n.outputs[0])) return false;
    if (n.op != OpKind::cast) return true;
    const int x = n.inputs[0];
    return opt.elementwise_casts && !is_int(x) && g.values[static_cast<size_t>(x)].role != Role::parameter &&
           low_of(n).has_value();
  };
  // The op reading node n's output that may continue its chain, or -1.
  auto next_of = [&](int n) {
    const int out = g.nodes[static_cast<size_t>(n)].outputs[0];
    const std::vector<int>& readers = rw.consumers()[static_cast<size_t>(out)];
    // A reader may take the chain's value as both operands (mul(h, h)): the program reads
    // the previous result twice.
    if (readers.size() != 1 || !rw.only_reader(out, readers[0])) return -1;
    const int r = readers[0];
    const Node& rn = g.nodes[static_cast<size_t>(r)];
    if (!chain_node(rn) || taken[static_cast<size_t>(r)] || shape_of(rn.outputs[0]) != shape_of(out)) return -1;
    // A bias_add continues the chain through its x, not through its bias.
    if (rn.op == OpKind::bias_add && rn.inputs[0] != out) return -1;
    return r;
  };
  for (int head : order) {
    const Node& h = g.nodes[static_cast<size_t>(head)];
    if (taken[static_cast<size_t>(head)] || !chain_node(h)) continue;
    Chain chain;
    chain.append(head, h, -1);
    taken[static_cast<size_t>(head)] = true;
    int last = head;
    DType low = *low_of(h);
    for (int n = next_of(last); n >= 0; n = next_of(last)) {
      const Node& nn = g.nodes[static_cast<size_t>(n)];
      const int cur = g.nodes[static_cast<size_t>(last)].outputs[0];
      const std::optional<DType> nlow = low_of(nn);
      if (!nlow || !one_low(*nlow, low) || !chain.fits(nn, cur)) break;
      if (*nlow != DType::F32) low = *nlow;
      chain.append(n, nn, cur);
      taken[static_cast<size_t>(n)] = true;
      last = n;
    }
    if (chain.nodes().size() < 2 || chain.instructions() == 0) continue;
    const Node& tail = g.nodes[static_cast<size_t>(last)];
    Node f;
    f.name = tail.name;
    f.op = OpKind::fused_elementwise;
    f.inputs = chain.inputs();
    f.outputs = tail.outputs;
    f.attrs.program = chain.program();
    // The head's request to run over its input 0, which is the fused node's input 0.
    // In place the output takes input 0's memory, so it needs input 0's dtype too.
    f.attrs.in_place = h.attrs.in_place && chain.inputs()[0] == h.inputs[0] &&
                       dtype_of(chain.inputs()[0]) == dtype_of(tail.outputs[0]);
    for (int n : chain.nodes()) rw.remove(n);
    rw.add_node(std::move(f), last);
  }
  return rw.finish();
}

}  // namespace tg
