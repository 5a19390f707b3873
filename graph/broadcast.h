#pragma once
// numpy broadcasting, as `where` (graph/op.h) and ONNX's Where apply it: the input shapes are
// right-aligned, and each input dim equals the output's or is 1 (missing leading dims count
// as 1). An input read at an output element skips the dims it broadcasts along: its stride
// there is 0.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "graph/shape.h"

namespace tg {

// The broadcast shape of `in`: true and out filled, or false and *why set (the message names
// the shapes and the dims that clash, without the op's name).
bool broadcast_shapes(const std::vector<Shape>& in, Shape& out, std::string* why);

// The element strides of `in` at each dim of `out` (which `in` broadcasts to), 0 where `in`
// repeats along it; dims past out.rank are 0.
std::array<int64_t, kMaxRank> broadcast_strides(const Shape& in, const Shape& out);

}  // namespace tg
