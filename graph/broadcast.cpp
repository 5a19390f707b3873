#include "graph/broadcast.h"

#include <algorithm>

#include <fmt/format.h>

namespace tg {

bool broadcast_shapes(const std::vector<Shape>& in, Shape& out, std::string* why) {
  Shape s;
  for (const Shape& x : in) s.rank = std::max(s.rank, x.rank);
  for (int d = 0; d < s.rank; ++d) s[d] = 1;
  for (size_t i = 0; i < in.size(); ++i) {
    const Shape& x = in[i];
    for (int d = 0; d < x.rank; ++d) {
      const int o = s.rank - x.rank + d;
      if (x[d] == 1 || x[d] == s[o]) continue;
      if (s[o] != 1) {
        if (why)
          *why = fmt::format("input {} {} does not broadcast against the others (dim {} is {} where another input "
                             "has {}); each dim, right-aligned, must be equal or 1",
                             i, x.str(), d, x[d], s[o]);
        return false;
      }
      s[o] = x[d];
    }
  }
  out = s;
  return true;
}

std::array<int64_t, kMaxRank> broadcast_strides(const Shape& in, const Shape& out) {
  std::array<int64_t, kMaxRank> st{};
  int64_t step = 1;
  for (int d = in.rank - 1; d >= 0; --d) {
    const int o = out.rank - in.rank + d;
    st[static_cast<size_t>(o)] = in[d] == 1 && out[o] != 1 ? 0 : step;
    step *= in[d];
  }
  return st;
}

}  // namespace tg
