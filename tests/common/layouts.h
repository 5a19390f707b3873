#pragma once
// Moving test data between the two layouts of a 4-D activation, NCHW and NHWC (channels last).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "graph/shape.h"

namespace tg::testing {

// [N, C, H, W] data as [N, H, W, C] (to_nhwc) and back (to_nchw); `nchw` is the NCHW shape.
inline std::vector<float> relayout(const std::vector<float>& v, const Shape& nchw, bool to_nhwc) {
  const int64_t n = nchw[0], c = nchw[1], h = nchw[2], w = nchw[3];
  std::vector<float> out(v.size());
  for (int64_t in = 0; in < n; ++in)
    for (int64_t ic = 0; ic < c; ++ic)
      for (int64_t ih = 0; ih < h; ++ih)
        for (int64_t iw = 0; iw < w; ++iw) {
          const size_t a = static_cast<size_t>(((in * c + ic) * h + ih) * w + iw);
          const size_t b = static_cast<size_t>(((in * h + ih) * w + iw) * c + ic);
          if (to_nhwc) out[b] = v[a];
          else out[a] = v[b];
        }
  return out;
}

}  // namespace tg::testing
