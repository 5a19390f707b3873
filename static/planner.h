#pragma once
// The static memory planner: a pure function over the IR (no device, no
// allocation), in the style of TVM's storage rewrite and TFLite's arena planner.
//
// Every value that the schedule produces gets an offset into one aligned arena.
// Two values may share bytes only when their lifetimes (producer step .. last
// consumer step, over the given schedule) do not overlap. Values that live in
// fixed buffers outside the arena -- inputs, parameters, optimizer state -- get
// offset -1; so do views, which alias their source's storage: reshapes, and slices
// that are one contiguous, aligned block of their source (a view at a byte offset).
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace tg {

// x rounded up to a multiple of a (a > 0): arena offsets, staging buffers.
template <class T>
constexpr T align_up(T x, T a) {
  return (x + a - 1) / a * a;
}

enum class PlanMode : uint8_t {
  naive,    // one buffer per value, back to back: what a plan without reuse costs
  planned,  // liveness + greedy-by-size best fit + in-place reuse
};
const char* plan_mode_name(PlanMode m);
bool parse_plan_mode(const std::string& s, PlanMode& out);

// Which nodes may write their output over input 0 (planned mode only).
enum class InPlacePolicy : uint8_t {
  none,         // never
  flagged,      // only nodes with attrs.in_place (relu(x, in_place=true))
  elementwise,  // flagged ones and every elementwise op (see op_can_run_in_place)
};

struct PlanOptions {
  PlanMode mode = PlanMode::planned;
  InPlacePolicy in_place = InPlacePolicy::elementwise;
  int64_t alignment = 256;  // bytes; every offset and the arena size are multiples of it
  // A slice that is one contiguous block of an arena value (every axis before the sliced one
  // of size 1, e.g. dq of attention_grad's [3, B, S, D]) at an offset that is a multiple of
  // `alignment` becomes a view of that block: no copy runs. Off: every slice copies.
  bool slice_views = true;
  // A region the kernels need for the whole run besides the values: the GEMMs'
  // workspace (the largest any of them needs, Backend::prepare). It goes at the arena's
  // end and is live at every step.
  int64_t workspace_bytes = 0;
  // Per node id (or empty): a workspace of the node's own, in bytes (0: none). Each is a block
  // of the arena live at its node's step alone (to the last step for a node of live_to_end),
  // placed among the values like a value: a convolution whose algorithm wants hundreds of MiB
  // then takes them from the feature maps that are dead at its step, where the shared region
  // above would hold the largest of them at every step.
  std::vector<int64_t> node_workspace;
  // Per node id (or empty): nodes that may still run after the steps that follow them (the
  // side stream of the lanes pass, static/passes/lanes.cpp). Every value they read or write
  // lives to the last step.
  std::vector<bool> live_to_end;
};

// Which ops may run in place is the op table's kInPlace flag (op_can_run_in_place in
// graph/op.h): ops whose output element i depends only on element i of input 0 (and
// of the other inputs). copy is left out because a copy exists precisely to get a
// distinct buffer.

// Where a value lives when the executor runs.
enum class Placement : uint8_t {
  arena,     // arena base + offset
  external,  // its own fixed buffer (input, parameter, optimizer state)
  view,      // the storage of `storage[v]`, view_offset[v] bytes in (a reshape, a slice)
  unused,    // no node reads or writes it and it is not an output
};

struct MemoryPlan {
  PlanMode mode = PlanMode::planned;
  int64_t alignment = 256;
  // Per value id.
  std::vector<int64_t> offset;         // arena offset, -1 when not in the arena
  std::vector<Placement> placement;
  std::vector<int> storage;            // the value whose buffer this one uses (itself, the
                                       // source of a view, or input 0 of an in-place node), resolved
                                       // to the root: storage[storage[v]] == storage[v]
  std::vector<int64_t> view_offset;    // bytes into the storage root's buffer: 0 but for slice views
  std::vector<int> first_step, last_step;  // lifetime of the value's storage group in schedule
                                           // steps; -1 for values outside the arena
  // Per node id: true when its output was placed over its input 0.
  std::vector<bool> in_place;

  int64_t arena_bytes = 0;         // the values and the workspace
  int64_t workspace_offset = -1;   // where the workspace starts in the arena; -1 without one
  int64_t workspace_bytes = 0;
  // Per node id: the offset of the node's own workspace (PlanOptions::node_workspace), -1
  // without one; and its bytes.
  std::vector<int64_t> node_workspace_offset;
  std::vector<int64_t> node_workspace_bytes;
  std::vector<bool> live_to_end;  // PlanOptions::live_to_end, for check_plan
  // max over steps of the bytes of storage groups live at that step (unaligned):
  // no plan for this schedule and these in-place decisions can use less.
  int64_t lower_bound = 0;
  int64_t external_bytes = 0;  // inputs + parameters + optimizer state
  // Bytes that own storage (roots only; views and in-place outputs add nothing),
  // by the role of the value, arena and external together. Indexed by Role.
  std::array<int64_t, 7> role_bytes{};
  int num_in_place = 0;

  int64_t role(Role r) const { return role_bytes[static_cast<size_t>(r)]; }
  // "arena 1.2 MiB (lower bound 1.1 MiB, 1.06x), 12 in place, external 4.0 MiB"
  std::string summary() const;
};

// Plans memory for running g's nodes in the order `schedule` (node ids; every
// node exactly once, every input produced earlier). Throws GraphError when the
// schedule is not such an order or a value the schedule reads is never written.
MemoryPlan plan_memory(const Graph& g, const std::vector<int>& schedule, const PlanOptions& opt = {});

// Checks a plan against the graph and schedule: no two storage groups live at
// the same step overlap in the arena, nor a node's own workspace with anything live at its
// step, every offset is aligned and in bounds, in-place decisions are legal. Returns "" when sound, else the first problem.
// Used by the tests and by the compiler in debug builds.
std::string check_plan(const Graph& g, const std::vector<int>& schedule, const MemoryPlan& plan);

}  // namespace tg
