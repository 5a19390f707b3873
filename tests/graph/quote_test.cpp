// Hostile names and hostile files (docs/reliability.md, "Round two (a)"): the one
// escaping rule (graph/quote.h), listings and messages that cannot be forged or
// flooded, and the loader's and validator's refusals of data that passed before.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>

#include "graph/builder.h"
#include "graph/dot.h"
#include "graph/errors.h"
#include "graph/json_io.h"
#include "graph/quote.h"
#include "graph/text_dump.h"
#include "graph/validate.h"
#include "tests/common/printable.h"

namespace {

using namespace tg;

using testing::terminal_safe;

const std::string kHostile[] = {
    std::string("\x1b[31mred\x1b[0m"), std::string("a\nfake line"), std::string("a\0b", 3), std::string("r\r\tx"),
    "r\u202eevil", "r\u2066x\u2069", std::string("r\xc2\x9b" "31m"), std::string("bad\xff\xfeutf8"),
    std::string("cut\xe2\x82"), "it's", "back\\slash", "", "\u00e9t\u00e9"};

Graph hostile_graph() {
  Graph g;
  RecordingBuilder b(g);
  std::vector<Value> xs;
  for (size_t i = 0; i < std::size(kHostile); ++i) xs.push_back(b.input(kHostile[i] + fmt::format("#{}", i), {2}));
  Value sum = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) sum = b.apply(OpKind::add, {sum, xs[i]}, {}, kHostile[i] + fmt::format("@{}", i));
  b.mark_output(sum);
  return g;
}

}  // namespace

TEST_CASE("quote: the escaping rule") {
  CHECK(quote_name("w0") == "'w0'");
  CHECK(quote_name("") == "''");
  CHECK(quote_name("\x1b[31mred") == "'\\x1b[31mred'");
  CHECK(quote_name("a\nb\tc\rd") == "'a\\nb\\tc\\rd'");
  CHECK(quote_name(std::string("a\0b", 3)) == "'a\\0b'");
  CHECK(quote_name("it's") == "'it\\'s'");
  CHECK(quote_name("a\\b") == "'a\\\\b'");
  CHECK(quote_name("\x7f") == "'\\x7f'");
  CHECK(quote_name("r\u202e") == "'r\\u{202e}'");        // bidi override
  CHECK(quote_name("\xc2\x9b") == "'\\u{009b}'");         // C1 CSI
  CHECK(quote_name("\xef\xbb\xbfx") == "'\\u{feff}x'");   // byte-order mark / zero-width no-break space
  CHECK(quote_name("\xff") == "'\\xff'");                 // not UTF-8
  CHECK(quote_name("\xc0\x80") == "'\\xc0\\x80'");        // an overlong NUL
  CHECK(quote_name("\xed\xa0\x80") == "'\\xed\\xa0\\x80'");  // a surrogate
  CHECK(quote_name("\xe2\x82") == "'\\xe2\\x82'");        // a truncated sequence
  CHECK(quote_name("\u00e9t\u00e9 \u4e2d") == "'\u00e9t\u00e9 \u4e2d'");  // other UTF-8 stays readable
  CHECK(escape_text("a'b\n") == "a'b\\n");                // no quotes: the quote is left as is
}

TEST_CASE("quote: long names are cut on a character boundary, with their size") {
  const std::string long_name(10'000'000, 'x');
  const std::string q = quote_name(long_name);
  CHECK(q == "'" + std::string(kMaxQuotedNameBytes, 'x') + "'... (a name of 10000000 bytes)");
  // A 2-byte character straddling the cut is left out whole, not split.
  const std::string accents = std::string(kMaxQuotedNameBytes - 1, 'a') + "\u00e9\u00e9";
  CHECK(quote_name(accents) == "'" + std::string(kMaxQuotedNameBytes - 1, 'a') + "'... (a name of " +
                                   std::to_string(accents.size()) + " bytes)");
}

TEST_CASE("quote: listed names are bare when plain, quoted in full otherwise") {
  CHECK(listed("mlp.l1.w") == "mlp.l1.w");
  CHECK(listed("a-b_c:d/e@f+g") == "a-b_c:d/e@f+g");
  CHECK(listed("a b") == "'a b'");
  CHECK(listed("") == "''");
  CHECK(listed("x\ny") == "'x\\ny'");
  const std::string long_name(1000, 'q');
  CHECK(listed(long_name + " ") == "'" + long_name + " '");  // a listing shows every name whole
}

TEST_CASE("quote: printable_message keeps lines, escapes the rest, and caps what is printed") {
  CHECK(printable_message("line 1\nline 2 \x1b[2J") == "line 1\nline 2 \\x1b[2J");
  const std::string big(100'000, 'z');
  const std::string m = printable_message(big, 1000);
  CHECK(m.size() < 1100);
  CHECK(m.find("more bytes left out") != std::string::npos);
  // Every byte escaped to four: still capped near the limit, not four times past it.
  const std::string esc(100'000, '\x01');
  const std::string e = printable_message(esc, 1000);
  CHECK(e.size() <= 1003 + 40);
  CHECK(terminal_safe(e));
}

TEST_CASE("quote: printable_line escapes line breaks too, and its cut stays on the line") {
  CHECK(printable_line("--dim 'a\nFORGED: ok' \x1b[2J") == "--dim 'a\\nFORGED: ok' \\x1b[2J");
  CHECK(printable_line("plain") == "plain");
  CHECK(printable_line("bad\xff utf8") == "bad\\xff utf8");
  const std::string big = "\n" + std::string(10'000'000, 'z');
  const std::string m = printable_line(big, 1000);
  CHECK(m.size() < 1100);
  CHECK(m.rfind("... (", std::string::npos) != std::string::npos);
  CHECK(m.find('\n') == std::string::npos);
  CHECK(terminal_safe(m, false));
}

TEST_CASE("listings: hostile names cannot forge lines or reach the terminal") {
  const Graph g = hostile_graph();
  const std::string dump = text_dump(g);
  CHECK(terminal_safe(dump));
  // One header, one line per input, one per node, one for the outputs: no fake lines.
  size_t lines = 0;
  for (char c : dump) lines += c == '\n';
  CHECK(lines == 1 + g.values_with_role(Role::input).size() + g.nodes.size() + 1);
  const std::string dot = graph_to_dot(g, "title\x1b[2J\n");
  CHECK(terminal_safe(dot));
  CHECK(dot.find("title\\\\x1b[2J\\\\n") != std::string::npos);
  // Every DOT statement stays on its line: the only newlines are the statements' own.
  size_t statements = 0;
  for (char c : dot) statements += c == '\n';
  CHECK(statements == 4 + g.values_with_role(Role::input).size() + 3 * g.nodes.size() + 1);
}

TEST_CASE("messages: names from a file are quoted and escaped, lists of errors capped") {
  Graph g = hostile_graph();
  g.nodes[0].inputs.push_back(0);  // add with three inputs: an arity error naming the hostile node
  const std::vector<std::string> errs = validation_errors(g);
  REQUIRE(!errs.empty());
  CHECK(errs[0].find("add 'a\\nfake line@1': takes 2 inputs, got 3") == 0);
  for (const std::string& e : errs) CHECK(terminal_safe(e));

  Graph many;
  for (int i = 0; i < 1000; ++i) {
    ValueInfo v;
    v.name = fmt::format("x{}", i);
    v.shape = {int64_t{1} << 37};
    v.role = Role::input;
    many.add_value(v);
  }
  REQUIRE(validation_errors(many).size() == 1000);
  try {
    validate(many);
    FAIL("validate accepted values too large for any device");
  } catch (const GraphError& e) {
    const std::string m = e.what();
    CHECK(m.find("invalid graph (1000 errors; the first 20):") == 0);
    CHECK(m.find("value 'x19'") != std::string::npos);
    CHECK(m.find("value 'x20'") == std::string::npos);
    CHECK(m.find("... and 980 more, left out") != std::string::npos);
  }
}

TEST_CASE("loader: a byte-order mark and NUL bytes are refused, wherever they are") {
  const std::string good = R"({"format": "twograph-graph", "version": 1, "inputs": [{"name": "x", "shape": [2]}],
                               "nodes": [], "outputs": []})";
  REQUIRE_NOTHROW(load_graph_json(good, "good.json"));
  CHECK_THROWS_WITH_AS(load_graph_json("\xef\xbb\xbf" + good, "bom.json"),
                       doctest::Contains("bom.json:1:1: starts with a UTF-8 byte-order mark"), GraphError);
  CHECK_THROWS_WITH_AS(load_graph_json(good + std::string(1, '\0'), "nul.json"),
                       doctest::Contains("nul.json:2:59: holds a NUL byte"), GraphError);
  CHECK_THROWS_WITH_AS(load_graph_json(good + std::string("\0{\"x\": 1}", 9), "nul.json"),
                       doctest::Contains("holds a NUL byte"), GraphError);
  CHECK_THROWS_WITH_AS(load_graph_json(std::string("\0", 1) + good, "nul.json"),
                       doctest::Contains("nul.json:1:1: holds a NUL byte"), GraphError);
}

TEST_CASE("loader: transpose needs perm, a uniform bound may not be negative, even one that rounds to -0") {
  const std::string head = R"({"format": "twograph-graph", "version": 1, "inputs": [{"name": "x", "shape": [2, 3]}], )";
  CHECK_THROWS_WITH_AS(load_graph_json(head + R"("nodes": [{"name": "t", "op": "transpose", "inputs": ["x"]}], "outputs": []})", "t.json"),
                       doctest::Contains("nodes[0].attrs: transpose 't' needs \"perm\""), GraphError);
  CHECK_NOTHROW(load_graph_json(head + R"("nodes": [{"name": "t", "op": "transpose", "inputs": ["x"], "attrs": {"perm": [1, 0]}}], "outputs": []})", "t.json"));
  for (const char* bound : {"-1e-50", "-0.0", "-1"}) {
    CAPTURE(bound);
    const std::string text = head + R"("parameters": [{"name": "w", "shape": [2], "init": {"uniform": )" + bound +
                             R"(}}], "nodes": [], "outputs": []})";
    CHECK_THROWS_WITH_AS(load_graph_json(text, "w.json"), doctest::Contains("parameters[0].init.uniform: must be >= 0"),
                         GraphError);
  }
}
