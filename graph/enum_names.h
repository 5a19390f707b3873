#pragma once
// Names of an enum whose values are 0..N-1, kept as one table in the enum's order: the
// name of a value ("?" past the table) and the value of a name.
#include <cstddef>
#include <string>

namespace tg {

template <typename E, size_t N>
const char* enum_name(const char* const (&names)[N], E e) {
  const auto i = static_cast<size_t>(e);
  return i < N ? names[i] : "?";
}

// False (out untouched) for a name not in the table.
template <typename E, size_t N>
bool parse_enum(const char* const (&names)[N], const std::string& s, E& out) {
  for (size_t i = 0; i < N; ++i)
    if (s == names[i]) {
      out = static_cast<E>(i);
      return true;
    }
  return false;
}

}  // namespace tg
