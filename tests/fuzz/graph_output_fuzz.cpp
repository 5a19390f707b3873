// libFuzzer target: what tg-graph prints (docs/reliability.md, "Round two (a)").
// The input bytes are used twice: as a name, through the escaping rule of
// graph/quote.h, and as a graph file, through everything `tg-graph print`, `dot`,
// `check` and `run` show: the loader's and the validator's messages, the listing,
// the DOT text, and (for small valid graphs) the interpreter. A bug aborts:
//  - escaped text a terminal would act on (a control byte, DEL, a C1, bidi, separator
//    or zero-width character), or a quoted name that does not decode back to the name;
//  - a message without its cap (a name past kMaxQuotedNameBytes shown whole, an error
//    list past kMaxListedErrors), or a validation error that spans two lines;
//  - a listing with more or fewer lines than it has values and nodes (a name forged a
//    line), a DOT line with unbalanced quotes;
//  - a validated graph that the interpreter refuses with anything but an InputError
//    (data computed at run time that an op cannot use is the only allowed failure).
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "graph/dot.h"
#include "graph/errors.h"
#include "graph/json_io.h"
#include "graph/quote.h"
#include "graph/text_dump.h"
#include "graph/validate.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/interpreter.h"
#include "tests/common/printable.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

constexpr const char* kSource = "fuzz.json";
// The interpreter runs graphs whose values fit in this many bytes (one buffer each).
constexpr int64_t kRunBytes = int64_t{1} << 20;

[[noreturn]] void bug(const std::string& what) { tg::fuzz::bug("graph_output_fuzz", what); }

void require_safe(const std::string& text, const char* what, bool allow_newlines = true) {
  const std::string where = tg::testing::unsafe_byte(text, allow_newlines);
  if (!where.empty()) bug(std::string(what) + " is not terminal-safe (" + where + "): " + tg::escape_text(text));
}

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// The inverse of quote_name for a name it showed whole: 'text' with quote.h's escapes.
std::string unquote(const std::string& q) {
  if (q.size() < 2 || q.front() != '\'' || q.back() != '\'') bug("a quoted name is not in quotes: " + q);
  std::string out;
  for (size_t i = 1; i + 1 < q.size(); ++i) {
    if (q[i] == '\'') bug("a quote inside a quoted name is not escaped: " + q);
    if (q[i] != '\\') {
      out += q[i];
      continue;
    }
    if (i + 2 >= q.size()) bug("a quoted name ends in a lone backslash: " + q);
    const char e = q[++i];
    if (e == 'n') out += '\n';
    else if (e == 't') out += '\t';
    else if (e == 'r') out += '\r';
    else if (e == '0') out += '\0';
    else if (e == '\'' || e == '\\') out += e;
    else if (e == 'x' && i + 2 < q.size() && hex(q[i + 1]) >= 0 && hex(q[i + 2]) >= 0) {
      out += static_cast<char>(hex(q[i + 1]) * 16 + hex(q[i + 2]));
      i += 2;
    } else if (e == 'u' && i + 1 < q.size() && q[i + 1] == '{') {
      uint32_t cp = 0;
      size_t k = i + 2;
      for (; k < q.size() && q[k] != '}'; ++k) {
        if (hex(q[k]) < 0) bug("a bad \\u{...} escape in " + q);
        cp = cp * 16 + static_cast<uint32_t>(hex(q[k]));
      }
      append_utf8(out, cp);
      i = k;
    } else {
      bug(std::string("an unknown escape \\") + e + " in " + q);
    }
  }
  return out;
}

void check_escaping(const std::string& name) {
  const std::string q = tg::quote_name(name);
  require_safe(q, "quote_name", false);
  if (name.size() <= tg::kMaxQuotedNameBytes) {
    if (unquote(q) != name) bug("quote_name does not decode back to the name: " + q);
  } else {
    const std::string tail = "... (a name of " + std::to_string(name.size()) + " bytes)";
    if (q.size() < tail.size() || q.compare(q.size() - tail.size(), tail.size(), tail) != 0)
      bug("a long name is not cut with its size: " + q.substr(0, 200));
    const std::string shown = unquote(q.substr(0, q.size() - tail.size()));
    if (shown.size() > tg::kMaxQuotedNameBytes || name.compare(0, shown.size(), shown) != 0)
      bug("a cut name does not show the name's first bytes");
  }
  const std::string l = tg::listed(name);
  require_safe(l, "listed", false);
  if (l != name && unquote(l) != name) bug("listed neither shows the name bare nor decodes back to it: " + l);
  require_safe(tg::escape_text(name), "escape_text", false);
  const std::string m = tg::printable_message(name, 512);
  require_safe(m, "printable_message");
  if (m.size() > 512 + 3 + 48) bug("printable_message is past its cap: " + std::to_string(m.size()) + " bytes");
}

// One line per leaf, per node, plus the header and the outputs line.
void check_listing(const tg::Graph& g) {
  const std::string dump = tg::text_dump(g);
  require_safe(dump, "the listing");
  size_t leaves = 0, lines = 0;
  for (const tg::ValueInfo& v : g.values) leaves += v.producer < 0;
  for (char c : dump) lines += c == '\n';
  if (lines != 1 + leaves + g.nodes.size() + 1)
    bug("the listing has " + std::to_string(lines) + " lines for " + std::to_string(leaves) + " leaves and " +
        std::to_string(g.nodes.size()) + " nodes: a name forged a line");

  const std::string dot = tg::graph_to_dot(g, kSource);
  require_safe(dot, "the DOT text");
  size_t edges = 0;
  for (const tg::Node& n : g.nodes)
    for (int in : n.inputs) edges += in >= 0 && in < static_cast<int>(g.values.size());
  size_t start = 0, dot_lines = 0;
  while (start < dot.size()) {
    const size_t end = dot.find('\n', start);
    if (end == std::string::npos) bug("the DOT text does not end in a line break");
    bool in_string = false;
    for (size_t i = start; i < end; ++i) {
      if (dot[i] == '\\' && in_string) ++i;  // an escaped character inside a string
      else if (dot[i] == '"') in_string = !in_string;
    }
    if (in_string) bug("a DOT line leaves a string open: " + dot.substr(start, end - start));
    ++dot_lines;
    start = end + 1;
  }
  if (dot_lines != 4 + leaves + g.nodes.size() + edges + 1)
    bug("the DOT text has " + std::to_string(dot_lines) + " lines, not one per statement");
}

void check_messages(const tg::Graph& g) {
  const std::vector<std::string> errs = tg::validation_errors(g);
  for (const std::string& e : errs) {
    require_safe(e, "a validation error", false);  // one error, one line
    if (e.size() > 8192) bug("a validation error of " + std::to_string(e.size()) + " bytes");
  }
  try {
    tg::validate(g);
  } catch (const tg::GraphError& e) {
    const std::string m = e.what();
    require_safe(m, "validate's message");
    size_t lines = 0;
    for (char c : m) lines += c == '\n';
    if (lines > tg::kMaxListedErrors + 1) bug("validate listed " + std::to_string(lines) + " lines");
  }
}

// A validated graph runs, or stops at data computed at run time that an op cannot use.
void check_run(const tg::Graph& g) {
  int64_t bytes = 0;
  for (const tg::ValueInfo& v : g.values) bytes += v.bytes();
  if (bytes > kRunBytes) return;
  try {
    std::vector<std::vector<float>> values = tg::make_values(g, 1);
    tg::interpret(g, values);
  } catch (const tg::InputError& e) {
    require_safe(e.what(), "an InputError");
  } catch (const std::exception& e) {
    bug(std::string("the interpreter refuses a validated graph: ") + tg::fuzz::type_name(typeid(e)) + ": " + e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tg::kernels::set_cpu_blas_threads(1);  // the same work every run, and no thread pool under ASan
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    check_escaping(text);
    tg::Graph g;
    try {
      g = tg::load_graph_json(text, kSource);
    } catch (const tg::GraphError& e) {
      require_safe(e.what(), "a loader error");
      return 0;
    }
    check_listing(g);
    check_messages(g);
    if (tg::validation_errors(g).empty()) check_run(g);
  } catch (const std::exception& e) {
    bug("unexpected exception " + tg::fuzz::type_name(typeid(e)) + ": " + e.what());
  }
  return 0;
}
