// The finite-difference check of every differentiable op of the table, from the
// shared samples (tests/common/op_samples.h): d/d(every input of the grad column)
// of sum(op(...) * proj). Inputs without a gradient get valid data: labels (the
// interpreter draws class indices for them) and a count (a fill constant).
// op_grad_test.cpp and matmul_grad_test.cpp add the cases a sample cannot express
// (an input used twice, in-place relu, every transpose combination).
#include <doctest/doctest.h>

#include <exception>
#include <string>

#include "tests/autodiff/gradcheck.h"
#include "tests/common/op_samples.h"

namespace tg::testing {

TEST_CASE("gradcheck: every differentiable op of the table, every sample") {
  int checked_ops = 0;
  for (OpKind op : all_ops()) {
    if (!op_is_differentiable(op)) continue;
    const std::string op_label = op_name(op);
    CAPTURE(op_label);
    for (const OpSample& s : op_samples(op)) {
      CAPTURE(s.what);
      GradCheckOptions opt;
      opt.away_from_zero = s.away_from_zero;
      opt.positive = s.positive_inputs != 0;
      opt.distinct = s.distinct;
      // A rule that throws (vjp() refuses one that leaves out an input of the grad
      // column) fails this sample; the loop goes on to the next sample and op.
      try {
        check_op_gradients(
            [&](Builder& b, std::vector<Value>& wrt) {
              std::vector<Value> ins;
              for (size_t i = 0; i < s.in.size(); ++i) {
                const int k = static_cast<int>(i);
                if (k == s.count_input) {
                  ins.push_back(fill(b, s.in[i], s.count));
                } else if (k == s.labels_input) {
                  ins.push_back(b.input("labels", s.in[i], s.labels_dtype));
                } else {
                  ins.push_back(b.input("x" + std::to_string(i), s.in[i]));
                  if (op_has_gradient_for(op, k)) wrt.push_back(ins.back());
                }
              }
              return b.apply(op, ins, s.attrs);
            },
            opt);
      } catch (const std::exception& err) {
        FAIL_CHECK(op_label, ": ", std::string(err.what()));
      }
    }
    ++checked_ops;
  }
  CHECK(checked_ops > 0);
}

}  // namespace tg::testing
