#include "graph/file_read.h"

#include <filesystem>
#include <fstream>

#include "graph/errors.h"

namespace tg {

std::string read_regular_file(const std::string& path, uintmax_t max_bytes, const std::string& what,
                              const std::string& limit_hint) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec == std::errc::too_many_symbolic_link_levels)
    graph_error("{}: cannot open: a loop of symbolic links; check where the links point", path);
  if (ec == std::errc::permission_denied)
    graph_error("{}: cannot open: permission denied on a folder of the path; check its permissions", path);
  if (ec && ec != std::errc::no_such_file_or_directory)
    graph_error("{}: cannot open: {}; check the path", path, ec.message());
  if (!fs::exists(st)) graph_error("{}: cannot open: no such file; check the path", path);
  if (!fs::is_regular_file(st)) graph_error("{}: is not a regular file; give the path of {}", path, what);
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) graph_error("{}: cannot read its size: {}", path, ec.message());
  if (size > max_bytes) graph_error("{}: is {} bytes; {}", path, size, limit_hint);
  std::ifstream in(path, std::ios::binary);
  if (!in) graph_error("{}: cannot open for reading; check its permissions", path);
  std::string bytes(static_cast<size_t>(size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  if (in.gcount() != static_cast<std::streamsize>(size)) graph_error("{}: read {} of {} bytes", path, in.gcount(), size);
  return bytes;
}

}  // namespace tg
