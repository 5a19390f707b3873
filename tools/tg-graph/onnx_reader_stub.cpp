// The ONNX reader of a build without libonnx (the GPU machine's build has no
// Debian packages): `tg-graph import` says so and exits 2.
#include "graph/errors.h"
#include "tools/tg-graph/onnx_model.h"

namespace tg::onnx {

bool have_onnx_reader() { return false; }

Model read_model_file(const std::string& path) {
  graph_error("{}: this build has no ONNX support; install libonnx-dev and libprotobuf-dev and reconfigure (cmake finds them "
              "through find_package(Protobuf) and find_package(ONNX)), or import the model on a machine that has it: the graph and weights files it "
              "writes run anywhere", path);
}

Model read_model_bytes(const std::string&, const std::string& path) { return read_model_file(path); }

}  // namespace tg::onnx
