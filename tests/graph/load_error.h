#pragma once
// The message a graph file's load fails with, for the tests of load errors.
#include <string>

#include "graph/errors.h"
#include "graph/json_io.h"

namespace tg::testing {

// The GraphError's message of loading `text`, or "" when it loads.
inline std::string load_error(const std::string& text) {
  try {
    load_graph_json(text, "t.json");
  } catch (const GraphError& e) {
    return e.what();
  }
  return "";
}

}  // namespace tg::testing
