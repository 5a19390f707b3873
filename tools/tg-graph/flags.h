#pragma once
// tg-graph's own number parsing. CLI11 reads "010" as octal, "0x10" and "inf" as
// numbers, and clamps a seed of 2^64 to 2^64 - 1 without a word; these accept plain
// decimal only and say what is wrong with anything else.
#include <cstdint>
#include <string>

namespace tg::graph_tool {

// Each returns "" and sets `out` when `text` is valid, else the reason (for the
// usage message: "--seed: <reason>").
// A seed: decimal digits (leading zeros allowed, read as decimal), 0 .. 2^64 - 1.
std::string parse_seed(const std::string& text, uint64_t& out);
// A memory limit in MiB: a finite decimal number > 0 ("512", "0.5", "1e3").
std::string parse_mib(const std::string& text, double& out);

}  // namespace tg::graph_tool
