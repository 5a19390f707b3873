#include "experiments/memory/agreement.h"

#include <fmt/format.h>

#include <cmath>

namespace tg::memory {

namespace th = tg::harness;

namespace {
// |measured/predicted - 1|. A role that exists in neither (inference gradients) agrees;
// one measured but predicted absent is off by all of its bytes: 1 (finite, for the report).
double relative_error(int64_t predicted, int64_t measured) {
  return predicted > 0 ? std::fabs(static_cast<double>(measured) / static_cast<double>(predicted) - 1)
                       : (measured == 0 ? 0.0 : 1.0);
}
}  // namespace

void Agreement::role(th::Report& r, const std::string& model, int64_t batch, const std::string& mode,
                     const std::string& source, MemRole role, int64_t predicted, int64_t measured, bool checked) {
  const bool planner = source == "planner";
  if (planner && predicted == 0 && measured == 0) return;  // role_bytes keeps its old rows (docs-tables)
  const std::string label = fmt::format("{} b{} {}", model, batch, mode);
  const th::Params base{{"model", model}, {"batch", batch}, {"mode", mode}, {"role", mem_role_name(role)}};
  const double err = relative_error(predicted, measured);
  th::Params p = base;
  p.emplace("source", source);
  p.emplace("config", label + " " + source);
  th::Measurement* m = nullptr;
  if (planner) {
    th::Params q = base;
    q.emplace("source", "predicted");
    q.emplace("config", label + " predicted");
    r.add_value("role_bytes", q, static_cast<double>(predicted), "B");
    m = &r.add_value("role_bytes", p, static_cast<double>(measured), "B");
  } else {
    p.emplace("checked", checked);
    m = &r.add_value("role_bytes_measured", p, static_cast<double>(measured), "B");
    m->extra["predicted_B"] = static_cast<double>(predicted);
    m->extra["diff_pct"] = predicted > 0 ? (static_cast<double>(measured) / static_cast<double>(predicted) - 1) * 100
                                         : err * 100;
  }
  if (predicted > 0) m->extra["measured/predicted"] = static_cast<double>(measured) / static_cast<double>(predicted);
  if (checked) check(source, fmt::format("{} {}", label, mem_role_name(role)), predicted, measured);
}

void Agreement::check(const std::string& source, const std::string& where, int64_t predicted, int64_t measured) {
  const double err = relative_error(predicted, measured);
  Worst& w = by_source_[source];
  ++w.checked;
  if (w.where.empty() || err > w.err) {
    w.err = err;
    w.where = fmt::format("{}: predicted {} B, measured {} B", where, predicted, measured);
  }
}

void Agreement::roles(th::Report& r, const std::string& model, int64_t batch, const std::string& mode,
                      const std::string& source, const RoleBytes& predicted, const RoleBytes& measured,
                      unsigned checked_mask) {
  for (int i = 0; i < kNumMemRoles; ++i)
    role(r, model, batch, mode, source, static_cast<MemRole>(i), predicted[static_cast<size_t>(i)],
         measured[static_cast<size_t>(i)], (checked_mask >> i) & 1u);
}

bool Agreement::finish(th::Report& r) const {
  Worst all;
  for (const auto& [source, w] : by_source_) {
    all.checked += w.checked;
    if (all.where.empty() || w.err > all.err) {
      all.err = w.err;
      all.where = source + ": " + w.where;
    }
  }
  bool ok = true;
  auto emit = [&](const std::string& source, const Worst& w) {
    const double pct = w.err * 100;
    const auto t = target_pct_.find(source);
    const double target = t == target_pct_.end() ? kTargetPct : t->second;
    const bool pass = pct <= target;
    ok = ok && pass;
    r.add_value("role_agreement_worst_pct",
                {{"source", source}, {"verdict", pass ? "pass" : "fail"}, {"target_pct", target},
                 {"roles_checked", w.checked}},
                pct, "%");
    fmt::print(stderr, "tg-memory: {:<27} worst role {:.2f}% over {} roles ({}): {} {:g}%)\n", source, pct, w.checked,
               w.where.empty() ? "-" : w.where, pass ? "PASS (<=" : "FAIL (>", target);
    if (!pass)
      r.skip("agreement (" + source + ")", fmt::format("a role is off by {:.1f}% (> {:g}%): {}", pct, target, w.where));
  };
  for (const auto& [source, w] : by_source_) emit(source, w);
  emit("all", all);
  return ok;
}

}  // namespace tg::memory
