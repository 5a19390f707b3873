#pragma once
// A readable listing of a graph, one line per value or node:
//   input x[32,512]
//   parameter w0[512,256] init uniform(0.05)
//   n3 = matmul(x[32,512], w0[512,256]) -> [32,256] temporary
#include <string>

#include "graph/graph.h"

namespace tg {

// Works on any graph, valid or not: ids out of range print as "?<id>".
std::string text_dump(const Graph& g);

}  // namespace tg
