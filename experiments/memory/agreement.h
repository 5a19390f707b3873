#pragma once
// tg-memory's per-role report: predicted vs measured bytes for every role, from
// each source, and the worst disagreement per source against its target (5% unless set).
#include <cstdint>
#include <map>
#include <string>

#include "experiments/harness/harness.h"
#include "experiments/memory/formulas.h"

namespace tg::memory {

inline constexpr double kTargetPct = 5.0;

// Sources of measured bytes, as the `source` parameter names them.
//   planner           the static planner's count of the graph's values (naive plan)
//   dynamic_keep_all  dynamic executor, nothing freed early: per-role peak of real allocations
//   dynamic           dynamic executor, early frees, steady state (workspace not predicted)
//   static            static executor, naive plan: device buffers and the arena split by role
class Agreement {
 public:
  // One role of one (model, batch, mode) from `source`: adds role_bytes_measured
  // (or role_bytes for the planner, with the predicted row next to it) and, when
  // `checked`, folds |measured/predicted - 1| into the source's worst.
  void role(harness::Report& r, const std::string& model, int64_t batch, const std::string& mode,
            const std::string& source, MemRole role, int64_t predicted, int64_t measured, bool checked);
  // All six roles; `checked_mask` bit i = MemRole i is part of the check.
  void roles(harness::Report& r, const std::string& model, int64_t batch, const std::string& mode,
             const std::string& source, const RoleBytes& predicted, const RoleBytes& measured,
             unsigned checked_mask = 0x3f);
  // One checked comparison outside the six roles (the precision rows): folds
  // |measured/predicted - 1| into `source`'s worst, `where` naming it.
  void check(const std::string& source, const std::string& where, int64_t predicted, int64_t measured);
  // role_agreement_worst_pct per source and for all of them, each with verdict
  // pass | fail; a note per failing source. Prints the summary on stderr.
  // Returns true when every checked role is within kTargetPct.
  bool finish(harness::Report& r) const;
  // A source judged against `pct` instead of kTargetPct (the VGG layer table's 2%).
  void set_target(const std::string& source, double pct) { target_pct_[source] = pct; }

 private:
  struct Worst {
    double err = 0;
    std::string where;
    int checked = 0;
  };
  std::map<std::string, Worst> by_source_;
  std::map<std::string, double> target_pct_;
};

}  // namespace tg::memory
