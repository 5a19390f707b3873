#pragma once
// The program of a fused_elementwise node (made by static/passes/elementwise.cpp): a
// chain of elementwise ops run per element in one kernel, so the values between them
// never go to memory.
//
// Operands are numbered in one space: 0..inputs-1 are the node's inputs, inputs + k is
// the result of instruction k. The program is a chain: instruction k >= 1 reads result
// k - 1 (as either operand, or both) and otherwise inputs only, and the node's output is
// the last result. An input of shape [cols] where the output is [.., cols] is read at
// i % cols (a bias, as bias_add reads it); every other input has the output's shape.
// Each instruction rounds as the unfused op's kernel does, on every backend.
//
// Values have float dtypes: input j the node's input j's, an instruction's result its
// operands' (one dtype: the unfused op's rule), a cast's its `to`. Every value is
// computed in f32 and rounded to nearest even to its dtype, as the unfused kernels store
// it, so a chain that crosses dtypes (a bf16 GEMM's output cast to f32 and added to the
// f32 residual) still gives the unfused chain's bits. The output has the last result's
// dtype. The values of one program are f32 and at most one of bf16 and f16, so that a
// kernel knows at launch which two dtypes each load and each rounding may be.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "graph/shape.h"

namespace tg {

// The ops a program runs; operand b unused by the unary ones, alpha by all but scale, to
// by all but cast.
enum class EwOp : uint8_t {
  add,        // a + b (bias_add too: b a [cols] input)
  sub,        // a - b
  mul,        // a * b
  scale,      // alpha * a
  relu,       // a > 0 ? a : 0
  relu_grad,  // b > 0 ? a : 0   (a = dy, b = relu's output)
  gelu,       // the tanh approximation of gelu(a)
  gelu_grad,  // a * gelu'(b)    (a = dy, b = gelu's input)
  tanh,          // tanh(a)
  tanh_grad,     // a (1 - b^2)    (a = dy, b = tanh's output)
  sigmoid,       // 1 / (1 + exp(-a))
  sigmoid_grad,  // a b (1 - b)     (a = dy, b = sigmoid's output)
  exp,           // exp(a)
  log,           // log(a)
  log_grad,      // a / b           (a = dy, b = log's input)
  gelu_erf,      // the exact gelu(a): 0.5 a (1 + erf(a / sqrt 2))
  gelu_erf_grad, // a * gelu_erf'(b) (a = dy, b = gelu_erf's input)
  cast,          // a rounded to nearest even to `to` (f32, bf16 or f16)
};
constexpr int kNumEwOps = 18;
const char* ew_op_name(EwOp op);
bool parse_ew_op(const std::string& name, EwOp& out);
// Binary ops read operand b.
bool ew_op_binary(EwOp op);

struct EwInstr {
  EwOp op = EwOp::add;
  uint8_t a = 0, b = 0;
  float alpha = 1.0f;
  DType to = DType::F32;
  bool operator==(const EwInstr& o) const;
};

// A program and its inputs are bounded so that the CUDA kernel gets the whole program
// as a launch parameter (8 bytes an instruction, under the 4 KB every device takes);
// the pass goes on in a new node where a chain is longer.
constexpr int kMaxEwInstrs = 128;
constexpr int kMaxEwInputs = 8;

struct EwProgram {
  std::vector<EwInstr> code;  // empty: no program (every op but fused_elementwise)
  int size() const { return static_cast<int>(code.size()); }
  bool operator==(const EwProgram& o) const { return code == o.code; }
  bool operator!=(const EwProgram& o) const { return !(*this == o); }
};

// "" when `p` is a valid program over `inputs` inputs, else what is wrong with it and
// how to fix it: the size, an unknown opcode, an operand out of range or breaking the
// chain, an input never read. Shape inference and the kernel entries both ask.
std::string ew_program_error(const EwProgram& p, int inputs);

// The dtype of each instruction's result (results[k]) for inputs of dtypes `inputs`; the
// output's is results.back(). "" when the program is valid over them (ew_program_error)
// and its dtypes agree, else what is wrong and how to fix it: an integer input, two
// operands of different dtypes, a cast to an integer, bf16 and f16 in one program.
std::string ew_program_dtypes(const EwProgram& p, const std::vector<DType>& inputs, std::vector<DType>* results);

}  // namespace tg
