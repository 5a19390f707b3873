#pragma once
// tg-memory's per-role measurements against the closed formulas, on one backend
// (device -1: the CPU backend). Shared by the cpu and gpu suites.
#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "experiments/harness/exec_common.h"
#include "experiments/memory/formulas.h"
#include "experiments/memory/measure.h"
#include "experiments/memory/precision_roles.h"
#include "experiments/memory/recording_backend.h"
#include "experiments/memory/vgg_layers.h"
#include "graph/training.h"
#include "tests/common/models.h"

namespace tg::testing {

struct MemCase {
  std::string name;
  ModelFn train, infer;  // with and without the loss
  memory::Predicted mom, sgd, inf;
};

inline std::vector<MemCase> small_mem_cases() {
  const MlpConfig m = mlp_config(6, 12, 20, 3, 5);
  const TransformerConfig t = transformer_config(2, 8, 16, 2);
  const ResNetConfig r = resnet_config(2, 8, 4, 1, 5);
  const VggConfig v = vgg_config(2, 8, 4, {1, 2}, 8, 5);
  return {
      {"mlp", mlp_model(m), mlp_model(without_loss(m)), memory::predict_mlp(m, true, true),
       memory::predict_mlp(m, true, false), memory::predict_mlp(m, false, false)},
      {"transformer", transformer_model(t), transformer_model(without_loss(t)), memory::predict_transformer(t, true, true),
       memory::predict_transformer(t, true, false), memory::predict_transformer(t, false, false)},
      {"resnet", resnet_model(r), resnet_model(without_loss(r)), memory::predict_resnet(r, true, true),
       memory::predict_resnet(r, true, false), memory::predict_resnet(r, false, false)},
      {"vgg", vgg_model(v), vgg_model(without_loss(v)), memory::predict_vgg(v, true, true),
       memory::predict_vgg(v, true, false), memory::predict_vgg(v, false, false)},
  };
}

struct MemMode {
  const char* name;
  bool training, momentum;
};
inline const MemMode kMemModes[] = {{"train_momentum", true, true}, {"train_sgd", true, false}, {"inference", false, false}};

inline const memory::Predicted& predicted_for(const MemCase& k, const MemMode& m) {
  return !m.training ? k.inf : m.momentum ? k.mom : k.sgd;
}

inline void check_role_bytes(const memory::RoleBytes& got, const memory::Predicted& want, unsigned mask = 0x3f) {
  for (int i = 0; i < memory::kNumMemRoles; ++i) {
    if (!((mask >> i) & 1u)) continue;
    INFO("role " << memory::mem_role_name(static_cast<memory::MemRole>(i)));
    CHECK(got[static_cast<size_t>(i)] == want.bytes[static_cast<size_t>(i)]);
  }
}

// Every mode of both small models: the dynamic executor (nothing freed early and
// with early frees) and the static executor's naive plan, role by role.
inline void check_roles_on(int device) {
  auto log = std::make_shared<memory::AllocationLog>();
  const std::shared_ptr<Backend> be = memory::make_recording_backend(device, log);
  for (const MemCase& k : small_mem_cases())
    for (const MemMode& m : kMemModes) {
      INFO(k.name << " " << m.name);
      const ModelFn& fn = m.training ? k.train : k.infer;
      const Feeds feeds = bench::model_feeds(fn, 3, 5);
      const memory::Predicted& want = predicted_for(k, m);
      DynamicOptions o;
      o.use_momentum = m.momentum;
      o.inference = !m.training;
      o.free_early = false;
      const memory::DynamicMeasured keep = memory::measure_dynamic(fn, *be, "caching", o, 1, feeds);
      check_role_bytes(keep.role_peak, want);
      // Nothing freed: every tensor is live at the end, so the allocator's peak is the sum of the roles.
      CHECK(keep.stats.peak == want.total());

      o.free_early = true;
      const memory::DynamicMeasured early = memory::measure_dynamic(fn, *be, "caching", o, 3, feeds);
      constexpr unsigned kNoWorkspace = 0x3fu & ~(1u << static_cast<int>(memory::MemRole::workspace));
      check_role_bytes(early.role_peak, want, kNoWorkspace);
      CHECK(early.role_peak[static_cast<size_t>(memory::MemRole::workspace)] > 0);
      CHECK(early.role_peak[static_cast<size_t>(memory::MemRole::workspace)] < want.at(memory::MemRole::workspace));

      CompileOptions co;
      co.training = m.training;
      co.train.use_momentum = m.momentum;
      co.plan.mode = PlanMode::naive;
      const memory::StaticMeasured s = memory::measure_static(fn, co, be, *log, feeds);
      check_role_bytes(s.roles, want);
      CHECK(s.unattributed_B == 0);
      CHECK(s.arena_alloc_B == s.planner_arena_B);
      // Naive: the arena is the gradients, activations and workspace, each value padded to 256 B.
      const int64_t in_arena = want.at(memory::MemRole::gradients) + want.at(memory::MemRole::activations) +
                               want.at(memory::MemRole::workspace);
      CHECK(s.arena_alloc_B >= in_arena);
      CHECK(s.arena_alloc_B < in_arena + 256 * 400);
      if (!m.training) {
        for (memory::MemRole r : {memory::MemRole::gradients, memory::MemRole::momentum, memory::MemRole::activations}) {
          INFO("inference role " << memory::mem_role_name(r));
          CHECK(keep.role_peak[static_cast<size_t>(r)] == 0);
          CHECK(early.role_peak[static_cast<size_t>(r)] == 0);
          CHECK(s.roles[static_cast<size_t>(r)] == 0);
        }
      }
    }
  // Everything the executors allocated went back to the device.
  CHECK(log->live().empty());
}

// VGG-16 at `image` with the loss (training) or without, ReLUs in place or not.
inline VggConfig vgg16_at(int64_t batch, int64_t image, bool training, bool in_place) {
  VggConfig v = at_size(vgg16_config(), batch, image);
  v.with_loss = training;
  v.in_place_relu = in_place;
  return v;
}

inline int64_t layers_sum(const std::vector<memory::LayerBytes>& layers, const std::string& quantity) {
  int64_t n = 0;
  for (const memory::LayerBytes& l : layers) n += memory::layer_quantity(l, quantity);
  return n;
}

// VGG-16 at 32 x 32, batch 2, training and inference, in-place ReLU off and on: the dynamic
// executor with nothing freed early allocates the formula's total less the buffers the
// in-place ReLUs share (tg-memory's layer_table_dynamic_peak), and with the ReLUs apart each
// role's bytes.
inline void check_vgg16_dynamic_on(int device) {
  auto log = std::make_shared<memory::AllocationLog>();
  const std::shared_ptr<Backend> be = memory::make_recording_backend(device, log);
  for (const MemMode& m : {kMemModes[0], kMemModes[2]})  // train_momentum, inference
    for (bool ip : {false, true}) {
      INFO(m.name << " in_place_relu " << ip);
      const VggConfig v = vgg16_at(2, 32, m.training, ip);
      const ModelFn fn = vgg_model(v);
      const memory::Predicted roles = memory::predict_vgg(v, m.training, m.momentum);
      const auto off = memory::predict_vgg_layers(vgg16_at(2, 32, m.training, false), m.training, m.momentum);
      const auto on = memory::predict_vgg_layers(v, m.training, m.momentum);
      DynamicOptions o;
      o.use_momentum = m.momentum;
      o.inference = !m.training;
      o.free_early = false;
      const memory::DynamicMeasured keep =
          memory::measure_dynamic(fn, *be, "caching", o, 1, bench::model_feeds(fn, 3, 5));
      // Within the 2% of tg-memory's layer table; the formula is exact, so to the byte.
      CHECK(keep.stats.peak == roles.total() - (layers_sum(off, "forward") - layers_sum(on, "forward")));
      // In place, a ReLU's output lives in the bias add's buffer: its bytes count under that
      // buffer's role (workspace), so the per-role formula holds with the ReLUs apart.
      if (!ip) check_role_bytes(keep.role_peak, roles);
    }
  CHECK(log->live().empty());
}

struct PrecisionCase {
  std::string name;
  ModelFn train, infer;
  std::function<memory::PrecisionPredicted(Precision, bool, bool)> predict;
};

inline std::vector<PrecisionCase> precision_cases() {
  const MlpConfig m = mlp_config(6, 12, 20, 3, 5);
  const MlpConfig one = mlp_config(4, 7, 9, 1, 3);  // one layer: no hidden activation, no saved weight copy
  const TransformerConfig t = transformer_config(2, 8, 16, 2);
  auto mlp_case = [](const char* name, const MlpConfig& c) {
    return PrecisionCase{name, mlp_model(c), mlp_model(without_loss(c)), [c](Precision p, bool tr, bool mom) {
                           return memory::predict_mlp_precision(c, p, tr, mom);
                         }};
  };
  return {mlp_case("mlp", m), mlp_case("mlp depth 1", one),
          {"transformer", transformer_model(t), transformer_model(without_loss(t)),
           [t](Precision p, bool tr, bool mom) { return memory::predict_transformer_precision(t, p, tr, mom); }}};
}

inline void check_dtype_roles(const memory::DtypeRoleBytes& got, const memory::DtypeRoleBytes& want) {
  for (int r = 0; r < memory::kNumPrecRoles; ++r)
    for (DType d : {DType::F32, DType::BF16, DType::F16}) {
      INFO("role " << memory::prec_role_name(static_cast<memory::PrecRole>(r)) << " " << dtype_name(d));
      CHECK(got.at(static_cast<memory::PrecRole>(r), d) == want.at(static_cast<memory::PrecRole>(r), d));
    }
}

// Per precision, the same small models in every mode: the bytes by role and dtype of the
// naive planner and of the static executor's allocations, and the dynamic executor's
// per-role peaks (nothing freed early), against the autocast formulas.
inline void check_precision_roles_on(int device, const std::vector<Precision>& precisions) {
  auto log = std::make_shared<memory::AllocationLog>();
  const std::shared_ptr<Backend> be = memory::make_recording_backend(device, log);
  for (Precision p : precisions)
    for (const PrecisionCase& k : precision_cases())
      for (const MemMode& m : kMemModes) {
        INFO(k.name << " " << m.name << " " << precision_name(p));
        const ModelFn& fn = m.training ? k.train : k.infer;
        const Feeds feeds = bench::model_feeds(fn, 3, 5);
        const memory::PrecisionPredicted want = k.predict(p, m.training, m.momentum);

        // Without dynamic loss scaling, as tg-memory measures (its formulas count autocast's
        // values only).
        TrainOptions to;
        to.use_momentum = m.momentum;
        to.loss_scale.enabled = false;
        const Graph g = m.training ? build_training_graph(with_precision(fn, p), to)
                                   : build_inference_graph(with_precision(fn, p));
        std::vector<int> order(g.nodes.size());
        std::iota(order.begin(), order.end(), 0);
        PlanOptions po;
        po.mode = PlanMode::naive;
        check_dtype_roles(memory::plan_dtype_role_bytes(g, plan_memory(g, order, po)), want.bytes);

        CompileOptions co;
        co.training = m.training;
        co.train.use_momentum = m.momentum;
        co.plan.mode = PlanMode::naive;
        co.precision = p;
        co.train.loss_scale.enabled = false;
        const memory::StaticMeasured s = memory::measure_static(fn, co, be, *log, feeds);
        check_dtype_roles(s.by_dtype, want.bytes);
        check_role_bytes(s.roles, want.graph_roles);
        CHECK(s.unattributed_B == 0);

        // The low_copies pass moves the weight copies into the parameter store, written by the
        // updates: the same bytes by (role, dtype), every copy's now persistent.
        if (m.training && precision_dtype(p) != DType::F32) {
          INFO("low_copies pass");
          const Graph lg = pass_low_copies(g);
          std::vector<int> lorder(lg.nodes.size());
          std::iota(lorder.begin(), lorder.end(), 0);
          check_dtype_roles(memory::plan_dtype_role_bytes(lg, plan_memory(lg, lorder, po)), want.bytes);
          co.passes = PassSet::only(PassId::low_copies);
          const memory::StaticMeasured l = memory::measure_static(fn, co, be, *log, feeds);
          check_dtype_roles(l.by_dtype, want.bytes);
          const DType low = precision_dtype(p);
          CHECK(want.bytes.at(memory::PrecRole::weight_copies, low) > 0);
          CHECK(l.persistent.at(memory::PrecRole::weight_copies, low) == want.bytes.at(memory::PrecRole::weight_copies, low));
          CHECK(s.persistent.at(memory::PrecRole::weight_copies, low) == 0);
          CHECK(l.unattributed_B == 0);
          co.passes = PassSet::none();
        }

        DynamicOptions o;
        o.use_momentum = m.momentum;
        o.inference = !m.training;
        o.free_early = false;
        o.precision = p;
        o.loss_scale.enabled = false;
        const memory::DynamicMeasured keep = memory::measure_dynamic(fn, *be, "caching", o, 1, feeds);
        check_role_bytes(keep.role_peak, want.graph_roles);
        CHECK(keep.stats.peak == want.bytes.total());

        // What the policy promises, read from the measurement: the master weights, their
        // gradients and momentum stay f32; under autocast every weight copy is low and
        // some activations are stored low (none at all in inference).
        const DType low = precision_dtype(p);
        using memory::PrecRole;
        for (PrecRole r : {PrecRole::parameters, PrecRole::gradients, PrecRole::momentum})
          CHECK(s.by_dtype.role(r) == s.by_dtype.at(r, DType::F32));
        if (low == DType::F32) {
          CHECK(s.by_dtype.role(PrecRole::weight_copies) == 0);
        } else {
          CHECK(s.by_dtype.at(PrecRole::weight_copies, low) > 0);
          CHECK(s.by_dtype.role(PrecRole::weight_copies) == s.by_dtype.at(PrecRole::weight_copies, low));
          CHECK((s.by_dtype.at(PrecRole::activations, low) > 0) == m.training);
        }
      }
  CHECK(log->live().empty());
}

}  // namespace tg::testing
