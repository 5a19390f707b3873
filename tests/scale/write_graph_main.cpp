// Writes the scale tests' forward graph (scale_graphs.h) of NODES nodes to FILE, for the
// ctest entry that runs tg-graph on it. Usage: tg_graph_scale_write NODES FILE
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "graph/json_io.h"
#include "tests/scale/scale_graphs.h"

int main(int argc, char** argv) {
  const int nodes = argc == 3 ? std::atoi(argv[1]) : 0;
  if (nodes < 8) {
    std::fputs("usage: tg_graph_scale_write NODES FILE (NODES >= 8)\n", stderr);
    return 2;
  }
  tg::testing::ChainOptions opt;
  opt.nodes = nodes;
  std::ofstream out(argv[2], std::ios::binary);
  out << tg::save_graph_json(tg::testing::block_chain(opt));
  out.close();
  if (!out) {
    std::fprintf(stderr, "tg_graph_scale_write: cannot write %s\n", argv[2]);
    return 1;
  }
  return 0;
}
