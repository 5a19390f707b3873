// The entry layer (run_cpu): coverage of every op, rejection of malformed
// calls, and the CPU backend object.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>

#include "graph/float_formats.h"
#include "kernels/backend.h"
#include "tests/common/op_samples.h"
#include "tests/kernels/kernel_test_util.h"

using namespace tg;
using namespace tg::testing;

TEST_CASE("run_cpu has a kernel for every op and writes every output element") {
  int covered = 0;
  for (OpKind op : all_ops()) {
    const std::vector<OpSample> samples = op_samples(op);
    const std::string op_label = op_name(op);
    CAPTURE(op_label);
    // A failure of one op is checked and reported here; the loop goes on to the next.
    CHECK_MESSAGE(!samples.empty(), op_label, " has no samples in tests/common/op_samples.h");
    for (const OpSample& s : samples) {
      CAPTURE(s.what);
      const bool arity_ok = op_arity_ok(op, static_cast<int>(s.in.size()));
      CHECK_MESSAGE(arity_ok, op_label, ": the sample has ", s.in.size(), " inputs; the op takes ", op_arity_text(op));
      if (!arity_ok) continue;
      std::vector<std::vector<float>> data = sample_data(s, 1);
      std::vector<Tensor> ins;
      for (size_t k = 0; k < data.size(); ++k) ins.push_back(tensor(s.in[k], data[k]));
      if (op_is_update(op)) {
        // Every parameter of the update changes (each group's, for the multi ops), unless
        // the sample sets the update's found-inf flag: then nothing it writes does (no
        // parameter, velocity, moment or step count).
        const size_t group = static_cast<size_t>(op_num_inputs(op));
        const size_t groups_end = static_cast<size_t>(op_group_inputs(op, static_cast<int>(ins.size())));
        const bool skipped = groups_end < ins.size() && s.count != 0.0f;
        std::vector<std::vector<float>> before;
        for (const Tensor& t : ins) before.push_back(t.data);
        kernels::OpCall c;
        std::vector<kernels::TensorView> more;
        set_inputs(c, ins, more);
        // A low-precision copy (the *_multi_cast updates) is 16-bit storage, compared widened.
        std::vector<std::vector<uint16_t>> copies(ins.size());
        for (size_t k = 0; k < ins.size(); ++k) {
          if (!sample_input_is_copy(s, k)) continue;
          copies[k].assign(ins[k].data.size(), 0);
          const kernels::TensorView v{reinterpret_cast<float*>(copies[k].data()), ins[k].shape, s.copy_dtype};
          if (k < c.in.size()) c.in[k] = v;
          else more[k - c.in.size()] = v;
        }
        c.op = op;
        c.attrs = &s.attrs;
        try {
          kernels::run_cpu(c);
        } catch (const std::exception& err) {
          FAIL_CHECK(op_label, ": run_cpu threw: ", std::string(err.what()));
          continue;
        }
        if (skipped) {
          for (size_t k = 0; k < groups_end; ++k)
            if (op_update_writes(op, static_cast<int>(k), static_cast<int>(ins.size())))
              CHECK_MESSAGE((bitwise_equal(ins[k].data, before[k]) &&
                             std::all_of(copies[k].begin(), copies[k].end(), [](uint16_t b) { return b == 0; })),
                            op_label, ": the update wrote input ", k, " although its found-inf flag is set");
          continue;
        }
        for (size_t k = 0; k < groups_end; k += group) {
          CHECK_MESSAGE(!bitwise_equal(ins[k].data, before[k]), op_label, ": the update left parameter ", k,
                        " unchanged: its dispatch case (kernels/cpu/dispatch.cpp) runs no kernel, or one that does "
                        "not write the parameter");
          if (!op_update_writes_copy(op)) continue;
          // The copy is the new parameter rounded to nearest even, as cast rounds it.
          std::vector<float> copy(ins[k].data.size());
          load_from_dtype(copies[k + group - 1].data(), copy.size(), s.copy_dtype, copy.data());
          for (size_t i = 0; i < copy.size(); ++i)
            CHECK_MESSAGE(copy[i] == round_to_dtype(ins[k].data[i], s.copy_dtype), op_label, ": group ", k / group,
                          " copy element ", i, " is not its parameter rounded");
        }
      } else {
        Tensor out;
        // run_op fills the output with NaN before the call (the poison): an element
        // still NaN afterwards was not written.
        try {
          out = run_op(op, ins, s.attrs);
        } catch (const std::exception& err) {
          FAIL_CHECK(op_label, ": run_cpu threw: ", std::string(err.what()));
          continue;
        }
        size_t poisoned = 0, infinite = 0;
        for (float v : out.data) {
          if (std::isnan(v)) ++poisoned;
          else if (!std::isfinite(v)) ++infinite;
        }
        CHECK_MESSAGE(poisoned == 0, op_label, ": ", poisoned, " of ", out.data.size(),
                      " output elements are left at the NaN poison: its dispatch case (kernels/cpu/dispatch.cpp) "
                      "runs no kernel, or one that does not write every element");
        CHECK_MESSAGE(infinite == 0, op_label, ": ", infinite, " of ", out.data.size(),
                      " output elements are infinite on the sample's data");
      }
    }
    ++covered;
  }
  CHECK(covered == kNumOps);
}

TEST_CASE("run_cpu rejects malformed calls with a message naming the op and the problem") {
  std::vector<float> a(6, 1.0f), b(6, 1.0f), out(6);
  Attrs at;
  kernels::OpCall c;
  c.op = OpKind::add;
  c.attrs = &at;
  c.num_inputs = 1;
  c.in[0] = {a.data(), Shape{2, 3}};
  c.in[1] = {b.data(), Shape{2, 3}};
  c.out = {out.data(), Shape{2, 3}};
  CHECK_THROWS_WITH_AS(kernels::run_cpu(c), doctest::Contains("run_cpu add: takes 2 inputs"), std::invalid_argument);
  c.num_inputs = 2;
  c.in[1].data = nullptr;
  CHECK_THROWS_WITH_AS(kernels::run_cpu(c), doctest::Contains("input 1 has no data"), std::invalid_argument);
  c.in[1].data = b.data();
  c.out.shape = Shape{7};
  CHECK_THROWS_WITH_AS(kernels::run_cpu(c), doctest::Contains("output has shape [7]"), std::invalid_argument);

  kernels::OpCall m;
  m.op = OpKind::matmul;
  m.attrs = &at;
  m.num_inputs = 2;
  m.in[0] = {a.data(), Shape{2, 3}};
  m.in[1] = {b.data(), Shape{2, 3}};
  m.out = {out.data(), Shape{2, 3}};
  CHECK_THROWS_WITH_AS(kernels::run_cpu(m), doctest::Contains("inner dims"), std::invalid_argument);
  m.in[1].shape = Shape{3, 2};
  m.out = {a.data(), Shape{2, 2}};
  CHECK_THROWS_WITH_AS(kernels::run_cpu(m), doctest::Contains("cannot run in place"), std::invalid_argument);
  m.out = {out.data(), Shape{2, 2}};
  m.attrs = nullptr;
  CHECK_THROWS_WITH_AS(kernels::run_cpu(m), doctest::Contains("attrs is null"), std::invalid_argument);

  // batch_norm_moments' epilogue is none or relu: another act is refused, not run as none.
  std::vector<float> x(12, 1.0f), gamma(3, 1.0f), beta(3, 0.0f), y(12), moments(6);
  Attrs gelu;
  gelu.act = Act::gelu;
  kernels::OpCall bn;
  bn.op = OpKind::batch_norm_moments;
  bn.attrs = &gelu;
  bn.num_inputs = 3;
  bn.in[0] = {x.data(), Shape{4, 3}};
  bn.in[1] = {gamma.data(), Shape{3}};
  bn.in[2] = {beta.data(), Shape{3}};
  bn.out = {y.data(), Shape{4, 3}};
  bn.out2 = {moments.data(), Shape{2, 3}};
  CHECK_THROWS_WITH_AS(kernels::run_cpu(bn), doctest::Contains("act gelu is not supported"), std::invalid_argument);
}

TEST_CASE("cpu backend: 256-aligned allocation, copies, run, synchronize") {
  auto be = make_cpu_backend();
  CHECK(be->kind() == DeviceKind::cpu);
  CHECK(be->name() == "cpu");
  float* x = static_cast<float*>(be->raw_alloc(3 * sizeof(float)));
  float* y = static_cast<float*>(be->raw_alloc(3 * sizeof(float)));
  void* empty = be->raw_alloc(0);
  CHECK(reinterpret_cast<uintptr_t>(x) % 256 == 0);
  CHECK(reinterpret_cast<uintptr_t>(y) % 256 == 0);
  CHECK(empty != nullptr);
  const float host[3] = {1.0f, -2.0f, 3.0f};
  be->copy_to_device(x, host, sizeof host);
  Attrs at;
  kernels::OpCall c;
  c.op = OpKind::relu;
  c.attrs = &at;
  c.num_inputs = 1;
  c.in[0] = {x, Shape{3}};
  c.out = {y, Shape{3}};
  be->run(c);
  be->synchronize();
  be->copy_on_device(x, y, sizeof host);
  float back[3] = {0, 0, 0};
  be->copy_to_host(back, x, sizeof back);
  CHECK(back[0] == 1.0f);
  CHECK(back[1] == 0.0f);
  CHECK(back[2] == 3.0f);
  CHECK_THROWS_WITH(be->raw_alloc(SIZE_MAX - 8), doctest::Contains("cannot allocate"));
  be->raw_free(x);
  be->raw_free(y);
  be->raw_free(empty);
}
