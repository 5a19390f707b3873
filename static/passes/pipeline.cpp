#include <fmt/format.h>

#include <chrono>
#include <stdexcept>

#include "static/passes/pass.h"
#include "trace/trace.h"

namespace tg {

const char* pass_name(PassId p) {
  switch (p) {
    case PassId::bn_fold: return "bn_fold";
    case PassId::conv: return "conv";
    case PassId::heads: return "heads";
    case PassId::attention: return "attention";
    case PassId::rows: return "rows";
    case PassId::linear: return "linear";
    case PassId::elementwise: return "elementwise";
    case PassId::optimizer: return "optimizer";
    case PassId::low_copies: return "low_copies";
    case PassId::vocab_pad: return "vocab_pad";
    case PassId::lanes: return "lanes";
    case PassId::channels_last: return "channels_last";
  }
  return "?";
}

std::string PassSet::str() const {
  if (empty()) return "none";
  if (*this == all()) return "all";
  const bool with_all = contains(all());
  std::string s = with_all ? "all" : "";
  for (int i = 0; i < kNumPasses; ++i) {
    const PassId p = static_cast<PassId>(i);
    if (has(p) && !(with_all && all().has(p))) s += (s.empty() ? "" : ",") + std::string(pass_name(p));
  }
  return s;
}

PassSet parse_passes(const std::string& text) {
  auto names = [] {
    std::string s;
    for (int i = 0; i < kNumPasses; ++i) s += (i ? ", " : "") + std::string(pass_name(static_cast<PassId>(i)));
    return s;
  };
  if (text == "none") return PassSet::none();
  // Each word once; "all" and a pass it holds may both be named ("all,rows" or "rows,all").
  PassSet set = PassSet::none(), named = PassSet::none();
  bool all_named = false;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string word = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (word == "all") {
      if (all_named)
        throw std::invalid_argument(fmt::format("passes '{}': 'all' is given twice; name each pass once", text));
      all_named = true;
      set = set | PassSet::all();
    } else {
      int found = -1;
      for (int i = 0; i < kNumPasses; ++i)
        if (word == pass_name(static_cast<PassId>(i))) found = i;
      if (found < 0)
        throw std::invalid_argument(fmt::format(
            "passes '{}': '{}' is not a pass; give none, all, or a comma list of: {}", text, word, names()));
      const PassId p = static_cast<PassId>(found);
      if (named.has(p))
        throw std::invalid_argument(fmt::format("passes '{}': '{}' is given twice; name each pass once", text, word));
      named = named.with(p);
      set = set.with(p);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return set;
}

const std::vector<OptionField<PassOptions>>& PassOptions::fields() {
  using O = PassOptions;
  static const std::vector<OptionField<O>> f = {
      switch_option<O, &O::gemm_updates>(
          "gemm_updates", "optimizer pass: a large weight's gradient GEMM computed inside its update (matmul_sgd_momentum)"),
      integer_option<O, &O::gemm_update_min_tiles>("gemm_update_min_tiles", 1, int64_t{1} << 30,
                                                   "the fewest 128 x 128 tiles a weight needs for that"),
      switch_option<O, &O::lanes_early_updates>(
          "lanes_early_updates", "lanes pass: large updates apart, on the side stream as soon as they can run"),
      switch_option<O, &O::lanes_side_gemm_updates>(
          "lanes_side_gemm_updates", "lanes pass: GEMM updates on the side stream too (pays with the tiled update kernel only)"),
      switch_option<O, &O::elementwise_casts>(
          "elementwise_casts", "elementwise pass: casts between f32 and bf16/f16 inside the fused chains"),
  };
  return f;
}

Graph run_passes(Graph g, PassSet set, const PassOptions& opt, std::vector<PassStats>* stats) {
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < kNumPasses; ++i) {
    const PassId p = static_cast<PassId>(i);
    if (!set.has(p)) continue;
    TG_TRACE_SCOPE_COPY(std::string("pass ") + pass_name(p));
    const auto t0 = Clock::now();
    const int before = static_cast<int>(g.nodes.size());
    switch (p) {
      case PassId::bn_fold: g = pass_bn_fold(g); break;
      case PassId::conv: g = pass_conv(g); break;
      case PassId::heads: g = pass_heads(g); break;
      case PassId::attention: g = pass_attention(g); break;
      case PassId::rows: g = pass_rows(g); break;
      case PassId::linear: g = pass_linear(g); break;
      case PassId::elementwise: g = pass_elementwise(g, opt); break;
      case PassId::optimizer:
        g = pass_optimizer(g, opt, set.has(PassId::lanes) && opt.lanes_early_updates ? kEarlyUpdateBytes : 0);
        break;
      case PassId::low_copies: g = pass_low_copies(g); break;
      case PassId::vocab_pad: g = pass_vocab_pad(g, opt); break;
      case PassId::lanes: break;  // marks nodes after scheduling (side_lane_nodes); rewrites nothing
      case PassId::channels_last: g = pass_channels_last(g); break;
    }
    if (stats)
      stats->push_back({p, before, static_cast<int>(g.nodes.size()),
                        std::chrono::duration<double, std::milli>(Clock::now() - t0).count()});
  }
  return g;
}

}  // namespace tg
