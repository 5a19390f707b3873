#pragma once
// Reading a whole input file (a graph file, weights, an ONNX model) with the same
// refusals everywhere: a missing path, anything but a regular file (devices and
// pipes can be endless: /dev/zero), a file over the limit, a short read. Every
// refusal is a GraphError that names the path and says what to give instead.
#include <cstdint>
#include <string>

namespace tg {

// `what` names the expected kind of file in messages: "a .json graph file".
// `limit_hint` says what the limit is and how to get past it.
std::string read_regular_file(const std::string& path, uintmax_t max_bytes, const std::string& what,
                              const std::string& limit_hint);

}  // namespace tg
