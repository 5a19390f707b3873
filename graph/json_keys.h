#pragma once
// Duplicate keys in JSON: nlohmann keeps the last of two equal keys, so a file
// with "shape" twice (a graph file) or a tensor listed twice (a weights header)
// would pass silently. json::sax_parse(text, &finder) throws DuplicateKey.
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace tg {

struct DuplicateKey {
  std::string key;
};

// Finds a key given twice in one object. A SAX pass rather than json::parse's
// callback: nlohmann's callback parser rescans the enclosing container at the end
// of every object, which made a file with 100k nodes take seconds (quadratic).
struct DuplicateKeyFinder : nlohmann::json_sax<nlohmann::json> {
  std::vector<std::set<std::string>> keys;
  bool start_object(std::size_t) override {
    keys.emplace_back();
    return true;
  }
  bool end_object() override {
    keys.pop_back();
    return true;
  }
  bool key(string_t& k) override {
    if (!keys.back().insert(k).second) throw DuplicateKey{k};
    return true;
  }
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }
};

}  // namespace tg
