#include "graph/name_index.h"

namespace tg {

namespace {

// The lowest index of `items` whose name is `name`, -1 when none: the scan a rename
// needs only when the name it leaves is held more than once.
template <typename T>
int lowest_named(const std::vector<T>& items, const std::string& name) {
  for (size_t i = 0; i < items.size(); ++i)
    if (items[i].name == name) return static_cast<int>(i);
  return -1;
}

}  // namespace

int NameIndex::Ids::find(const std::string& name) const {
  auto it = ids_.find(name);
  return it == ids_.end() ? -1 : it->second.lowest;
}

void NameIndex::Ids::add(const std::string& name, int id) {
  auto [it, fresh] = ids_.emplace(name, Entry{id, 1});
  if (fresh) return;
  ++it->second.count;
  if (id < it->second.lowest) it->second.lowest = id;
}

template <typename LowestWith>
void NameIndex::Ids::remove(const std::string& name, int id, LowestWith lowest_with) {
  auto it = ids_.find(name);
  if (it == ids_.end()) return;
  if (--it->second.count == 0) {
    ids_.erase(it);
    return;
  }
  if (it->second.lowest == id) it->second.lowest = lowest_with(name);
}

void NameIndex::sync() {
  if (g_->values.size() < values_seen_ || g_->nodes.size() < nodes_seen_) {
    values_.clear();
    nodes_.clear();
    values_seen_ = nodes_seen_ = 0;
  }
  for (; values_seen_ < g_->values.size(); ++values_seen_)
    values_.add(g_->values[values_seen_].name, static_cast<int>(values_seen_));
  for (; nodes_seen_ < g_->nodes.size(); ++nodes_seen_)
    nodes_.add(g_->nodes[nodes_seen_].name, static_cast<int>(nodes_seen_));
}

void NameIndex::value_renamed(int id, const std::string& old_name) {
  if (static_cast<size_t>(id) >= values_seen_) return;  // sync() will take it in under its new name
  values_.remove(old_name, id, [this](const std::string& n) { return lowest_named(g_->values, n); });
  values_.add(g_->values[static_cast<size_t>(id)].name, id);
}

void NameIndex::node_renamed(int id, const std::string& old_name) {
  if (static_cast<size_t>(id) >= nodes_seen_) return;
  nodes_.remove(old_name, id, [this](const std::string& n) { return lowest_named(g_->nodes, n); });
  nodes_.add(g_->nodes[static_cast<size_t>(id)].name, id);
}

}  // namespace tg
