// libFuzzer target: the input bytes are a safetensors weights file (graph/weights.h).
//
// A GraphError naming the file is the expected answer to a damaged one. Everything else
// is a bug and aborts, so libFuzzer saves the input: a crash or sanitizer report, an
// exception of another type, a GraphError without the file's name, and for a file that
// reads, weights that do not survive a write and a second read bit for bit.
#include <cstdint>
#include <cstring>
#include <exception>
#include <string>

#include "graph/errors.h"
#include "graph/weights.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

[[noreturn]] void bug(const std::string& what) { tg::fuzz::bug("weights_fuzz", what); }

constexpr const char* kSource = "fuzz.safetensors";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    tg::Weights w;
    try {
      w = tg::weights_from_safetensors(bytes, kSource);
    } catch (const tg::GraphError& e) {
      if (std::string(e.what()).find(kSource) == std::string::npos)
        bug(std::string("a refusal that does not name the file: ") + e.what());
      return 0;
    }
    tg::Weights back;
    try {
      back = tg::weights_from_safetensors(tg::weights_to_safetensors(w), "written.safetensors");
    } catch (const tg::GraphError& e) {
      bug(std::string("weights that were read cannot be read again once written: ") + e.what());
    }
    if (back.size() != w.size()) bug("a write and a read change the number of tensors");
    for (const auto& [name, t] : w) {
      const auto it = back.find(name);
      if (it == back.end()) bug("a write and a read lose a tensor");
      if (it->second.shape != t.shape || it->second.data.size() != t.data.size() ||
          (!t.data.empty() &&
           std::memcmp(it->second.data.data(), t.data.data(), t.data.size() * sizeof(float)) != 0))
        bug("a write and a read change a tensor's shape or bits");
    }
  } catch (const std::exception& e) {
    bug("unexpected exception " + tg::fuzz::type_name(typeid(e)) + ": " + e.what());
  }
  return 0;
}
