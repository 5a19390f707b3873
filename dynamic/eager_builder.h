#pragma once
// The eager builder: the dynamic executor's implementation of tg::Builder. Each
// apply() infers the output shape, records the op on this iteration's tape,
// allocates the output, launches the kernel at once and returns a Value whose id
// names a tensor slot. See dynamic/README.md for when tensors are freed.
#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "dynamic/allocator.h"
#include "graph/autodiff.h"
#include "graph/builder.h"
#include "graph/graph.h"
#include "kernels/backend.h"

namespace tg {

// How the per-op host time is measured. `sampled` reads the clock at the phase
// boundaries of one op in every `sample_period` and scales up: cheap enough to
// leave on (tests/dynamic check the cost); `every_op` times each op.
enum class Timing : uint8_t { off, sampled, every_op };

struct PhaseTimes {
  double build_s = 0;   // shape inference, tape and trace records (apply() up to allocation)
  double alloc_s = 0;   // allocator calls: the output's allocation and the frees after the op
  double launch_s = 0;  // Backend::run (enqueue on CUDA, the kernel itself on the CPU)
  int64_t ops = 0;      // apply() calls
  int64_t timed_ops = 0;
};

struct EagerOptions {
  bool record_tape = true;     // off: inference, nothing is kept for backward
  bool free_early = true;      // free a tensor right after its last use (see README)
  bool in_place_relu = false;  // every relu writes into its input (also honoured per op via attrs.in_place)
  Timing timing = Timing::off;
  int sample_period = 16;      // a power of two
  uint64_t seed = 0;           // initial_values seed for parameters
};

class EagerBuilder final : public Builder {
 public:
  EagerBuilder(Backend& backend, Allocator& allocator, EagerOptions opt = {});
  ~EagerBuilder() override;
  EagerBuilder(const EagerBuilder&) = delete;
  EagerBuilder& operator=(const EagerBuilder&) = delete;

  // ---- Builder ----
  Value input(const std::string& name, const Shape& shape, DType dtype = DType::F32) override;
  Value parameter(const std::string& name, const Shape& shape, ParamInit init = {},
                  DType dtype = DType::F32) override;
  Value apply(OpKind op, const std::vector<Value>& inputs, const Attrs& attrs = {},
              const std::string& name = "") override;
  void mark_output(const Value& v) override;
  Value optimizer_state(const Value& param, const std::string& name) override;
  Value training_state(const std::string& name, const Shape& shape, ParamInit init,
                       DType dtype = DType::F32) override;
  // An iteration begun without training (inference) builds in eval mode.
  bool eval() const override { return !training_; }

  // ---- iteration control ----
  // Starts an iteration: `feeds` must outlive it. `training` records the tape; without it
  // updates are skipped (apply returns an invalid Value), as an inference graph has none.
  void begin_iteration(const Feeds& feeds, bool training);
  // Ops applied from here on are not taped and their outputs get `role` (the
  // trainer switches to Role::gradient for backward and the update).
  void set_taping(bool on, Role role);
  // Frees every tensor of this iteration and learns the last-use plan for the next.
  void end_iteration();
  // After a failure mid-iteration: frees everything and forgets the plan (a
  // partial trace must not become the next iteration's plan).
  void abort_iteration();
  const std::vector<TapeEntry>& tape() const { return tape_; }

  // ---- data ----
  std::vector<float> read(const Value& v);  // copy to host (synchronizes)
  // read() into a vector the caller keeps from iteration to iteration (copy_to_host_into).
  void read_into(const Value& v, std::vector<float>& out);
  void write(const Value& v, const std::vector<float>& host);
  // Persistent tensors (parameters, then optimizer state) in first-use order.
  struct Persistent {
    std::string name;
    Shape shape;
    DType dtype = DType::F32;
    Role role = Role::parameter;
    int id = -1;  // Value id
  };
  const std::vector<Persistent>& persistent() const { return persistent_; }
  Value handle(int id) const;

  // ---- measurements ----
  PhaseTimes phase_times() const;  // this iteration so far, scaled up for sampling
  // Live bytes per role right now ("parameter 1.0 MiB, activation 3.2 MiB, ...").
  std::string role_breakdown() const;

  // ---- per-role peaks under the static graph's roles (tg-memory) ----
  // The eager roles approximate build_training_graph's (graph/training.h): in
  // training every forward tensor is taped as activation and every backward one
  // as gradient. With tracking on, end_iteration() labels this iteration's tensors
  // the way build_training_graph does -- a forward tensor that a backward op reads:
  // activation, else temporary; a backward tensor that an update reads as its
  // gradient: gradient, else temporary; a marked output: output (over temporary
  // and activation only); inputs stay inputs -- and replays the iteration's
  // allocations and frees in order under those labels. Bytes count under the
  // label of the tensor that owns the memory (a view adds nothing), as the static
  // planner's role_bytes do; parameters and optimizer state count in full.
  // Off by default: it costs a vector append per allocation, free and op.
  // Throws std::logic_error when called inside an iteration.
  void set_role_tracking(bool on);
  // Max live bytes of role r over the iterations finished since the last
  // reset_role_peaks() (0 without tracking). Each role peaks at its own moment,
  // so the sum over roles can exceed the allocator's peak.
  int64_t role_peak(Role r) const { return role_peak_[static_cast<size_t>(r)]; }
  void reset_role_peaks() { role_peak_ = {}; }

  static constexpr int kPersistentBase = 1 << 30;
  // A block slice becomes a view where it starts on this many bytes (static/planner.h's default
  // alignment), so that both executors run the same kernels.
  static constexpr uintptr_t kViewAlignment = 256;

 private:
  std::vector<unsigned char> read_staging_;  // read_into's 16-bit bytes before widening
  struct Slot {
    float* data = nullptr;
    Shape shape;
    DType dtype = DType::F32;
    Block block;        // owned memory (owner slots only)
    int owner = -1;     // slot whose block this one uses (itself, or the base of a view)
    int aliases = 0;    // on the owner: live slots using the block
    Role role = Role::temporary;
    bool alive = false;
    bool pinned = false;  // marked output: freed at end_iteration only
  };
  struct TraceOp {
    OpKind op;
    int nin;
    int in[kMaxOpInputs];
    int out;
  };
  Slot& slot(int id);
  Slot& live_slot(int id, OpKind op, int pos);
  int new_slot(const Shape& shape, Role role, DType dtype);
  int new_persistent(const std::string& name, const Shape& shape, Role role, ParamInit init, DType dtype);
  int find_persistent(const std::string& name) const;  // index into persistent_, or -1
  Value take_persistent(int idx);                       // its handle; moves param_cursor_ past it
  void alloc_slot(int id);
  void release(int id);
  void count_memory() const;  // the trace's memory counter, while a trace records
  void check_trace(const TraceOp& t);
  void learn_plan();
  void replay_role_peaks();

  Backend& backend_;
  Allocator& alloc_;
  EagerOptions opt_;
  const Feeds* feeds_ = nullptr;
  bool in_iteration_ = false;
  bool taping_ = true;
  bool training_ = false;
  // Off in an inference iteration: updates (batch norm's running statistics in a model built
  // with its loss) are skipped, as the static inference graph prunes them.
  bool run_updates_ = true;
  Role role_ = Role::activation;

  std::vector<Slot> slots_;       // this iteration's tensors; index = Value id
  std::vector<Slot> pslots_;      // persistent tensors; Value id = kPersistentBase + index
  std::vector<Persistent> persistent_;
  std::unordered_map<std::string, int> persistent_by_name_;
  size_t param_cursor_ = 0;       // the k-th parameter() call usually asks for persistent_[k]

  std::vector<TapeEntry> tape_;
  std::vector<Shape> shapes_;     // reused per op: shape inference's input list
  std::vector<DType> dtypes_;     // reused per op: the dtype rule's input list
  std::string node_name_;

  // Last-use plan learned from the previous iteration of the same kind (training
  // or inference) with the same feed sizes: after op k, free plan slots [off[k], off[k+1]).
  struct Plan {
    std::vector<TraceOp> trace;
    std::vector<int> offsets, frees;
    std::vector<size_t> feed_sizes;
    bool valid = false;
  };
  Plan plans_[2];                 // [0] inference, [1] training
  Plan* plan_ = nullptr;
  bool plan_ok_ = false;
  std::vector<TraceOp> trace_;    // this iteration
  std::vector<int> last_use_;
  std::vector<size_t> feed_sizes_;

  std::array<int64_t, 8> role_bytes_{};
  // Role tracking: this iteration's allocations (slot id) and frees (~owner id)
  // in order, whether each trace op ran untaped (backward or update), the peaks.
  bool track_roles_ = false;
  std::vector<int> role_events_;
  std::vector<uint8_t> op_untaped_;
  std::array<int64_t, 8> role_peak_{};
  PhaseTimes times_;
  int64_t build_ns_ = 0, alloc_ns_ = 0, launch_ns_ = 0;
  int64_t op_counter_ = 0;
  int64_t sample_mask_ = 15;
};

}  // namespace tg
