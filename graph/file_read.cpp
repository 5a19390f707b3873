#include "graph/file_read.h"

#include <filesystem>
#include <fstream>

#include "graph/errors.h"
#include "graph/quote.h"

namespace tg {

std::string read_regular_file(const std::string& path, uintmax_t max_bytes, const std::string& what,
                              const std::string& limit_hint) {
  namespace fs = std::filesystem;
  // Messages show the path escaped: a name with a line break cannot forge a line.
  const std::string shown = printable_line(path, kMaxShownPathBytes);
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec == std::errc::too_many_symbolic_link_levels)
    graph_error("{}: cannot open: a loop of symbolic links; check where the links point", shown);
  if (ec == std::errc::permission_denied)
    graph_error("{}: cannot open: permission denied on a folder of the path; check its permissions", shown);
  if (ec && ec != std::errc::no_such_file_or_directory)
    graph_error("{}: cannot open: {}; check the path", shown, ec.message());
  if (!fs::exists(st)) graph_error("{}: cannot open: no such file; check the path", shown);
  if (!fs::is_regular_file(st)) graph_error("{}: is not a regular file; give the path of {}", shown, what);
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) graph_error("{}: cannot read its size: {}", shown, ec.message());
  if (size > max_bytes) graph_error("{}: is {} bytes; {}", shown, size, limit_hint);
  std::ifstream in(path, std::ios::binary);
  if (!in) graph_error("{}: cannot open for reading; check its permissions", shown);
  std::string bytes(static_cast<size_t>(size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  if (in.gcount() != static_cast<std::streamsize>(size)) graph_error("{}: read {} of {} bytes", shown, in.gcount(), size);
  return bytes;
}

}  // namespace tg
