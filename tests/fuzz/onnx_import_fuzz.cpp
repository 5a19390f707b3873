// libFuzzer target: the input bytes are an ONNX model (protobuf), read and imported
// as `tg-graph import` does, from a folder of its own that holds nothing else (so
// external data names files that are not there, or links that lead out of it).
//
// A GraphError is the expected answer to a bad model. Everything else is a bug and
// aborts, so libFuzzer saves the input: a crash or sanitizer report, an exception of
// another type, a GraphError without the model's name, and, for a model that imports,
// anything the project's own check would refuse in what import writes: the graph must
// validate, its saved text must load again, and the weights must round-trip through
// safetensors and attach to the loaded graph. Hangs and huge allocations are caught by
// libFuzzer's -timeout and -malloc_limit_mb (scripts/fuzz.sh sets both).
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>

#include "graph/errors.h"
#include "graph/json_io.h"
#include "graph/validate.h"
#include "graph/weights.h"
#include "tests/fuzz/fuzz_util.h"
#include "tools/tg-graph/onnx_import.h"

namespace {

[[noreturn]] void bug(const std::string& what) { tg::fuzz::bug("onnx_import_fuzz", what); }

// An empty folder of its own, made once: the model's path names a file in it.
const std::string& model_path() {
  static const std::string path = [] {
    char folder[] = "/tmp/tg-onnx-fuzz.XXXXXX";
    if (!mkdtemp(folder)) bug("cannot make a temporary folder");
    return std::string(folder) + "/fuzz.onnx";
  }();
  return path;
}

void check_message(const tg::GraphError& e, const char* phase) {
  if (std::string(e.what()).find("fuzz.onnx") == std::string::npos)
    bug(std::string(phase) + " refused the model without naming it: " + e.what());
}

// What `tg-graph import` writes for `g`, read back as `tg-graph check` and bench read it.
void check_written(const tg::Graph& g) {
  try {
    tg::validate(g);
  } catch (const tg::GraphError& e) {
    bug(std::string("the imported graph does not validate: ") + e.what());
  }
  const tg::Weights w = tg::weights_of(g);
  tg::Graph plain = g;
  tg::strip_weights(plain);
  const std::string text = tg::save_graph_json(plain);
  const std::string weights = tg::weights_to_safetensors(w);
  try {
    tg::Graph back = tg::load_graph_json(text, "imported.json");
    tg::attach_weights(back, tg::weights_from_safetensors(weights, "imported.safetensors"), "imported.safetensors");
    tg::validate(back);
  } catch (const tg::GraphError& e) {
    bug(std::string("import writes files that the project's own check refuses: ") + e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    tg::onnx::Model model;
    try {
      model = tg::onnx::read_model_bytes(bytes, model_path());
    } catch (const tg::GraphError& e) {
      check_message(e, "the reader");
      return 0;
    }
    // One pass with the default options, one with a loss appended, as `--loss mse` does.
    for (const auto loss : {tg::onnx::ImportOptions::Loss::none, tg::onnx::ImportOptions::Loss::mse}) {
      tg::onnx::ImportOptions opt;
      opt.loss = loss;
      tg::onnx::Imported im;
      try {
        im = tg::onnx::import_model(model, opt, model_path());
      } catch (const tg::GraphError& e) {
        check_message(e, "the importer");
        continue;
      }
      check_written(im.graph);
    }
  } catch (const std::exception& e) {
    bug("unexpected exception " + tg::fuzz::type_name(typeid(e)) + ": " + e.what());
  }
  return 0;
}
