#include "graph/graph.h"

#include <fmt/format.h>

#include <algorithm>

#include "graph/errors.h"

namespace tg {

namespace {
constexpr const char* kRoleNames[] = {"input",      "parameter", "gradient", "optimizer_state",
                                      "activation", "temporary", "output"};
}

const char* role_name(Role r) { return kRoleNames[static_cast<int>(r)]; }

bool parse_role(const std::string& s, Role& out) {
  for (int i = 0; i < 7; ++i) {
    if (s == kRoleNames[i]) {
      out = static_cast<Role>(i);
      return true;
    }
  }
  return false;
}

bool Attrs::operator==(const Attrs& o) const {
  return trans_a == o.trans_a && trans_b == o.trans_b && axis == o.axis && size == o.size &&
         eps == o.eps && alpha == o.alpha && value == o.value && lr == o.lr &&
         momentum == o.momentum && in_place == o.in_place && shape == o.shape && perm == o.perm && act == o.act &&
         program == o.program && heads == o.heads && to == o.to && conv == o.conv && start == o.start &&
         growth_factor == o.growth_factor && backoff_factor == o.backoff_factor && growth_interval == o.growth_interval &&
         adam == o.adam && max_norm == o.max_norm && causal == o.causal && ignore_index == o.ignore_index &&
         channels_last == o.channels_last &&
         p == o.p && rng_stream == o.rng_stream;
}

int Graph::add_value(ValueInfo v) {
  values.push_back(std::move(v));
  return static_cast<int>(values.size()) - 1;
}

int Graph::add_node(Node n) {
  const int id = static_cast<int>(nodes.size());
  for (int out : n.outputs)
    if (out >= 0 && out < static_cast<int>(values.size())) values[static_cast<size_t>(out)].producer = id;
  nodes.push_back(std::move(n));
  return id;
}

int Graph::find_value(const std::string& name) const {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].name == name) return static_cast<int>(i);
  return -1;
}

int Graph::find_node(const std::string& name) const {
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].name == name) return static_cast<int>(i);
  return -1;
}

std::vector<int> Graph::values_with_role(Role r) const {
  std::vector<int> ids;
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].role == r) ids.push_back(static_cast<int>(i));
  return ids;
}

std::vector<std::vector<int>> Graph::consumers() const {
  std::vector<std::vector<int>> c(values.size());
  for (size_t n = 0; n < nodes.size(); ++n)
    for (int in : nodes[n].inputs)
      if (in >= 0 && in < static_cast<int>(values.size())) {
        auto& list = c[static_cast<size_t>(in)];
        if (list.empty() || list.back() != static_cast<int>(n)) list.push_back(static_cast<int>(n));
      }
  return c;
}

std::vector<int> Graph::topo_order() const {
  // Kahn's algorithm, taking ready nodes in id order so the order is stable:
  // a graph recorded in execution order comes back unchanged.
  const size_t n = nodes.size();
  const auto valid = [this](int v) { return v >= 0 && v < static_cast<int>(values.size()); };
  // Update ops (sgd) mutate their inputs; they must run after every other
  // reader of those inputs. Direct reader -> update edges would be R * U for a
  // value with R readers and U updates (a hostile file makes that billions), so
  // each such value gets a barrier node (ids n, n+1, ...): readers -> barrier ->
  // updates. A barrier is passed the moment it is ready and never listed, so the
  // order is the same as with direct edges.
  std::vector<int> barrier_of(values.size(), -1);
  size_t total = n;
  for (size_t i = 0; i < n; ++i)
    if (op_is_update(nodes[i].op))
      for (int in : nodes[i].inputs)
        if (valid(in) && barrier_of[static_cast<size_t>(in)] < 0)
          barrier_of[static_cast<size_t>(in)] = static_cast<int>(total++);
  std::vector<int> pending(total, 0);
  std::vector<std::vector<int>> users(total);
  auto edge = [&](size_t from, int to) {
    ++pending[static_cast<size_t>(to)];
    users[from].push_back(to);
  };
  for (size_t i = 0; i < n; ++i) {
    for (int in : nodes[i].inputs) {
      if (!valid(in)) continue;
      int p = values[static_cast<size_t>(in)].producer;
      if (p >= 0 && p < static_cast<int>(n)) edge(static_cast<size_t>(p), static_cast<int>(i));
      const int b = barrier_of[static_cast<size_t>(in)];
      if (b < 0) continue;
      if (op_is_update(nodes[i].op)) edge(static_cast<size_t>(b), static_cast<int>(i));
      else if (users[i].empty() || users[i].back() != b) edge(i, b);  // a node reading a value twice waits once
    }
  }
  std::vector<int> order;
  order.reserve(n);
  std::vector<int> ready;
  // Min-heap by id keeps the order stable.
  auto cmp = [](int a, int b) { return a > b; };
  // Barriers have no work: pass them at once (their users are updates, never barriers).
  auto release = [&](int v) {
    for (int u : users[static_cast<size_t>(v)]) {
      if (--pending[static_cast<size_t>(u)] != 0) continue;
      if (static_cast<size_t>(u) >= n) {
        for (int w : users[static_cast<size_t>(u)])
          if (--pending[static_cast<size_t>(w)] == 0) {
            ready.push_back(w);
            std::push_heap(ready.begin(), ready.end(), cmp);
          }
      } else {
        ready.push_back(u);
        std::push_heap(ready.begin(), ready.end(), cmp);
      }
    }
  };
  for (size_t b = n; b < total; ++b)
    if (pending[b] == 0) {  // a value that only updates read
      pending[b] = -1;
      for (int w : users[b]) --pending[static_cast<size_t>(w)];
    }
  for (size_t i = 0; i < n; ++i)
    if (pending[i] == 0) ready.push_back(static_cast<int>(i));
  std::make_heap(ready.begin(), ready.end(), cmp);
  while (!ready.empty()) {
    std::pop_heap(ready.begin(), ready.end(), cmp);
    int v = ready.back();
    ready.pop_back();
    order.push_back(v);
    release(v);
  }
  if (order.size() != n) {
    // A node left over may only sit downstream of the cycle. Every left-over node
    // has a left-over predecessor, so walking back through them must repeat a
    // node, and that node is on the cycle.
    std::vector<std::vector<int>> preds(n);
    for (size_t p = 0; p < n; ++p)
      for (int u : users[p]) preds[static_cast<size_t>(u)].push_back(static_cast<int>(p));
    int cur = 0;
    while (pending[static_cast<size_t>(cur)] == 0) ++cur;
    std::vector<int> seen_at(n, -1), path;
    while (seen_at[static_cast<size_t>(cur)] < 0) {
      seen_at[static_cast<size_t>(cur)] = static_cast<int>(path.size());
      path.push_back(cur);
      for (int p : preds[static_cast<size_t>(cur)])
        if (pending[static_cast<size_t>(p)] > 0) {
          cur = p;
          break;
        }
    }
    std::vector<int> loop{cur};  // cur -> ... -> cur, in the direction values flow
    for (size_t k = path.size(); k-- > static_cast<size_t>(seen_at[static_cast<size_t>(cur)]);) loop.push_back(path[k]);
    // A long cycle (say 20k nodes in a generated file) is shown by its ends, not by every name.
    constexpr size_t kHead = 8, kTail = 3;
    std::string cycle;
    for (size_t k = 0; k < loop.size(); ++k) {
      if (loop.size() > kHead + kTail + 1 && k == kHead) {
        cycle += fmt::format(" -> ({} more nodes)", loop.size() - kHead - kTail);
        k = loop.size() - kTail;
      }
      cycle += (k ? " -> " : "") + quote_name(nodes[static_cast<size_t>(loop[k])].name);
    }
    graph_error("graph has a cycle through node {} ({}): {}; a node cannot depend on its own output; "
                "break the cycle by reading a value produced earlier",
                quote_name(nodes[static_cast<size_t>(cur)].name), op_name(nodes[static_cast<size_t>(cur)].op), cycle);
  }
  return order;
}

}  // namespace tg
