#include "experiments/memory/measure.h"

#include <fmt/format.h>

#include <iterator>
#include <map>
#include <set>
#include <stdexcept>

#include "experiments/harness/interrupt.h"

namespace tg::memory {

namespace {
int64_t& at(RoleBytes& r, MemRole m) { return r[static_cast<size_t>(m)]; }
constexpr Role kRoles[] = {Role::input,      Role::parameter, Role::gradient, Role::optimizer_state,
                           Role::activation, Role::temporary, Role::output};
}  // namespace

MemRole mem_role_of(Role r) {
  switch (r) {
    case Role::parameter: return MemRole::parameters;
    case Role::gradient: return MemRole::gradients;
    case Role::optimizer_state: return MemRole::momentum;
    case Role::activation: return MemRole::activations;
    case Role::input: return MemRole::inputs;
    case Role::temporary:
    case Role::output: return MemRole::workspace;
  }
  return MemRole::workspace;
}

RoleBytes plan_role_bytes(const MemoryPlan& p) {
  RoleBytes r{};
  for (Role role : kRoles) at(r, mem_role_of(role)) += p.role(role);
  return r;
}

DynamicMeasured measure_dynamic(const ModelFn& fn, Backend& be, const std::string& allocator,
                                const DynamicOptions& o, int steps, const Feeds& feeds) {
  DynamicTrainer t(fn, be, allocator, o);
  EagerBuilder& b = t.builder();
  b.set_role_tracking(true);
  for (int i = 0; i < steps; ++i) {
    harness::throw_if_interrupted();  // a training step of the larger models takes a second on the CPU
    if (o.inference) t.run_inference(feeds);
    else t.step(feeds);
    if (i == 0 && steps > 1) {
      be.synchronize();
      t.allocator().reset_peak();
      b.reset_role_peaks();
    }
  }
  be.synchronize();
  DynamicMeasured m;
  for (Role role : kRoles) at(m.role_peak, mem_role_of(role)) += b.role_peak(role);
  m.stats = t.allocator_stats();
  return m;
}

StaticMeasured measure_static(const ModelFn& fn, CompileOptions co, const std::shared_ptr<Backend>& be,
                              const AllocationLog& log, const Feeds& feeds) {
  co.backend = be;
  co.params = nullptr;  // a fresh store: every parameter buffer is this compile's
  const std::map<const void*, size_t> before = log.live();
  CompiledPlan p = compile(fn, co);
  if (co.training) p.step(feeds);
  else p.run(feeds);
  be->synchronize();
  std::map<const void*, size_t> fresh;  // allocations made by compile() and the step, still live
  for (const auto& [ptr, bytes] : log.live()) {
    auto it = before.find(ptr);
    if (it == before.end() || it->second != bytes) fresh.emplace(ptr, bytes);
  }
  const StaticExecutable& x = *p.exec;
  const Graph& g = x.graph();
  const MemoryPlan& plan = x.plan();
  // The fresh allocation [base, base + bytes) that holds [ptr, ptr + n), or end().
  auto holding = [&](const void* ptr, int64_t n) {
    auto it = fresh.upper_bound(ptr);
    if (it == fresh.begin()) return fresh.end();
    --it;
    const char* base = static_cast<const char*>(it->first);
    const char* q = static_cast<const char*>(ptr);
    return q + n <= base + it->second ? it : fresh.end();
  };
  StaticMeasured m;
  m.planner_arena_B = plan.arena_bytes;
  std::set<const void*> used;
  const void* arena = nullptr;
  for (size_t v = 0; v < g.values.size(); ++v) {
    const ValueInfo& vi = g.values[v];
    const Placement pl = plan.placement[v];
    if (pl == Placement::view || pl == Placement::unused) continue;
    if (pl == Placement::arena && plan.storage[v] != static_cast<int>(v)) continue;  // in place: no bytes of its own
    const void* ptr = x.pointer(static_cast<int>(v));
    auto it = holding(ptr, vi.bytes());
    if (it == fresh.end())
      throw std::runtime_error(fmt::format("tg-memory: value '{}' ({}, {} B) is in no device allocation that compiling "
                                           "and running the plan made: its bytes cannot be attributed",
                                           vi.name, role_name(vi.role), vi.bytes()));
    // An external value's bytes are its own buffer, as allocated; an arena value's its share of the arena, by the plan.
    const int64_t bytes = pl == Placement::external ? static_cast<int64_t>(it->second) : vi.bytes();
    at(m.roles, mem_role_of(vi.role)) += bytes;
    m.by_dtype.at(prec_role_of(g, static_cast<int>(v)), vi.dtype) += bytes;
    if (pl == Placement::external && vi.role != Role::input)
      m.persistent.at(prec_role_of(g, static_cast<int>(v)), vi.dtype) += bytes;
    if (pl != Placement::external) {
      if (arena && arena != it->first)
        throw std::runtime_error(fmt::format("tg-memory: the plan's arena values lie in two allocations ('{}')", vi.name));
      arena = it->first;
    }
    used.insert(it->first);
  }
  if (arena) m.arena_alloc_B = static_cast<int64_t>(fresh.at(arena));
  for (const auto& [ptr, bytes] : fresh) {
    m.new_allocs_B += static_cast<int64_t>(bytes);
    ++m.num_allocs;
    if (!used.count(ptr)) m.unattributed_B += static_cast<int64_t>(bytes);
  }
  return m;
}

}  // namespace tg::memory
