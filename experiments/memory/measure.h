#pragma once
// Bytes per role measured from real allocations, for both executors:
//   dynamic: the eager builder's per-role peaks (EagerBuilder::set_role_tracking),
//            i.e. the bytes of the tensors it allocated, labelled as the static
//            training graph labels them, replayed in allocation order;
//   static:  the allocations a compiled plan made through a recording backend
//            (recording_backend.h): the parameter store's and the input buffers'
//            by the role of the value they hold, and the arena -- one allocation --
//            split by role as the plan places values in it.
#include <cstdint>
#include <memory>
#include <string>

#include "dynamic/allocator.h"
#include "dynamic/eager_builder.h"
#include "dynamic/trainer.h"
#include "experiments/memory/formulas.h"
#include "experiments/memory/precision_roles.h"
#include "experiments/memory/recording_backend.h"
#include "graph/graph.h"
#include "graph/models.h"
#include "static/compiler.h"
#include "static/planner.h"

namespace tg::memory {

// graph/ roles -> tg-memory's: temporary and output (prediction, loss) are workspace.
MemRole mem_role_of(Role r);
// The planner's bytes per role (storage roots only: views add nothing).
RoleBytes plan_role_bytes(const MemoryPlan& p);

struct DynamicMeasured {
  // Per role, the max live bytes over the measured iterations. Workspace is the
  // temporary peak plus the output peak (they may peak at different moments).
  RoleBytes role_peak{};
  AllocatorStats stats;
};

// `steps` iterations (training unless o.inference) of a fresh DynamicTrainer;
// with steps > 1 the first is left out of the peaks (it learns the free plan
// and keeps every tensor), as it is left out of the allocator's.
DynamicMeasured measure_dynamic(const ModelFn& fn, Backend& be, const std::string& allocator,
                                const DynamicOptions& o, int steps, const Feeds& feeds);

struct StaticMeasured {
  // Naive plans only: bytes of the device allocations holding parameters,
  // optimizer state and inputs, and of the arena's values by their role.
  RoleBytes roles{};
  DtypeRoleBytes by_dtype;      // the same bytes by (role, dtype), weight copies apart (precision_roles.h)
  DtypeRoleBytes persistent;    // of by_dtype, the bytes in the parameter store (outside the arena)
  int64_t arena_alloc_B = 0;    // size of the device allocation that holds the arena
  int64_t planner_arena_B = 0;  // the plan's arena_bytes: what the planner predicted
  int64_t new_allocs_B = 0;     // everything compiling and one step took from the device
  int64_t unattributed_B = 0;   // of that, in no allocation above (0 unless a buffer is unknown)
  int num_allocs = 0;
};

// Compiles `fn` with `co` (its backend replaced by `be`, which must record into
// `log`), runs it once with `feeds` (a step when co.training) and attributes
// every allocation it made. Throws std::runtime_error when a value's buffer is
// in no allocation the compile made (the bytes would be unaccounted).
StaticMeasured measure_static(const ModelFn& fn, CompileOptions co, const std::shared_ptr<Backend>& be,
                              const AllocationLog& log, const Feeds& feeds);

}  // namespace tg::memory
