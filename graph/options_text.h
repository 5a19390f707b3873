#pragma once
// The text form of an options struct (CudaBackendOptions in kernels/cuda_options.h,
// PassOptions in static/passes/pass.h): "key=value" items joined by ',', as PyTorch's
// PYTORCH_CUDA_ALLOC_CONF spells its settings. A switch is written 1 or 0, an integer in
// decimal. One parser for every such struct, so that each refuses the same mistakes in the
// same words: an item that is not key=value, a key the struct does not have, a value of the
// wrong kind or out of range, a key given twice. Each struct lists its fields once (a table
// of OptionField), and its text form, its parser, its help and its report columns all come
// from that table, so they cannot disagree.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tg {

// One field of an options struct S: a switch (a bool member, written 1 or 0) or an integer in
// [lo, hi] (an int64_t member), reached through get and set; made by switch_option and
// integer_option.
template <typename S>
struct OptionField {
  const char* key;
  bool is_switch;
  int64_t lo, hi;
  int64_t (*get)(const S&);
  void (*set)(S&, int64_t);
  const char* help;
};

template <typename S, bool S::*M>
OptionField<S> switch_option(const char* key, const char* help) {
  return {key, true, 0, 1, [](const S& s) -> int64_t { return s.*M ? 1 : 0; }, [](S& s, int64_t v) { s.*M = v != 0; },
          help};
}

template <typename S, int64_t S::*M>
OptionField<S> integer_option(const char* key, int64_t lo, int64_t hi, const char* help) {
  return {key, false, lo, hi, [](const S& s) -> int64_t { return s.*M; }, [](S& s, int64_t v) { s.*M = v; }, help};
}

// One field's value, for report rows and metadata: a switch (1 or 0) or an integer.
struct OptionValue {
  std::string key;
  int64_t value = 0;
  bool is_switch = false;
};

namespace options_detail {
// The items of `text` as (key, value) pairs in their order, spaces around each trimmed; ""
// gives none. Throws std::invalid_argument, worded with `kind` ("a CUDA backend option"),
// for an empty item, an item without '=', a key not in `keys`, or a key given twice.
std::vector<std::pair<std::string, std::string>> split_items(const std::string& text, const std::string& kind,
                                                             const std::vector<std::string>& keys);
// A switch's value: "1" or "0"; else std::invalid_argument naming the key and the value.
bool switch_value(const std::string& key, const std::string& value);
// An integer in [lo, hi], in decimal; else std::invalid_argument naming the key and the value.
int64_t integer_value(const std::string& key, const std::string& value, int64_t lo, int64_t hi);
}  // namespace options_detail

// base with the items of `text` applied over it. `kind` words the errors.
template <typename S>
S options_from_string(const std::string& text, const S& base, const std::vector<OptionField<S>>& fields,
                      const std::string& kind) {
  std::vector<std::string> keys;
  for (const auto& f : fields) keys.push_back(f.key);
  S out = base;
  for (const auto& [key, value] : options_detail::split_items(text, kind, keys))
    for (const auto& f : fields)
      if (key == f.key)
        f.set(out, f.is_switch ? (options_detail::switch_value(key, value) ? 1 : 0)
                               : options_detail::integer_value(key, value, f.lo, f.hi));
  return out;
}

// Every field as key=value, in the table's order: what options_from_string reads back.
template <typename S>
std::string options_str(const S& s, const std::vector<OptionField<S>>& fields) {
  std::string out;
  for (const auto& f : fields) out += (out.empty() ? "" : ",") + std::string(f.key) + "=" + std::to_string(f.get(s));
  return out;
}

// Every field's value, in the table's order.
template <typename S>
std::vector<OptionValue> options_values(const S& s, const std::vector<OptionField<S>>& fields) {
  std::vector<OptionValue> out;
  for (const auto& f : fields) out.push_back(OptionValue{f.key, f.get(s), f.is_switch});
  return out;
}

// One line per field, "  key=DEFAULT  help", the defaults those of S{}; no line break after
// the last.
template <typename S>
std::string options_help(const std::vector<OptionField<S>>& fields) {
  const S d{};
  std::string out;
  for (const auto& f : fields) {
    const std::string item = std::string(f.key) + "=" + std::to_string(f.get(d));
    out += (out.empty() ? "  " : "\n  ") + item + std::string(item.size() < 28 ? 28 - item.size() : 1, ' ') + f.help;
  }
  return out;
}

// The text API of an options struct S, from its table and its name in messages: S derives
// from TextOptions<S> and gives `static const std::vector<OptionField<S>>& fields()` and
// `static constexpr const char* kKind` ("a pass option").
template <typename S>
struct TextOptions {
  // base with "key=value,..." applied over it ("" changes nothing). Throws
  // std::invalid_argument naming the bad item and listing the keys.
  static S from_string(const std::string& text, const S& base) {
    return options_from_string(text, base, S::fields(), S::kKind);
  }
  static S from_string(const std::string& text) { return from_string(text, S{}); }
  // Every option, as from_string reads it: "key=1,key=512,...".
  std::string str() const { return options_str(self(), S::fields()); }
  // Every option and its value, in str()'s order: report columns.
  std::vector<OptionValue> values() const { return options_values(self(), S::fields()); }
  // One line per option: its default and what it does (for --help).
  static std::string help() { return options_help(S::fields()); }
  bool operator==(const S& o) const { return str() == o.str(); }
  bool operator!=(const S& o) const { return !(*this == o); }

 private:
  const S& self() const { return static_cast<const S&>(*this); }
};

}  // namespace tg
