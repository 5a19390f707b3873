#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "experiments/harness/report_io.h"
#include "experiments/harness/table.h"
#include "tools/tg-report/compare.h"

using namespace tg::harness;
using tg::report::Verdict;

namespace {
// Samples spread evenly around `median` by +-spread (relative): p10..p90 = median*(1 +- 0.8 spread).
std::vector<double> around(double median, double spread, int n = 21) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(median * (1.0 + spread * (2.0 * i / (n - 1) - 1.0)));
  return v;
}
Report make(std::vector<std::pair<std::string, std::vector<double>>> ms, const std::string& better = "lower") {
  Report r;
  r.meta.tool = "tg-test";
  r.meta.utc_time = "2026-12-02T13:00:00Z";
  r.meta.min_reps = 1;
  r.meta.max_reps = 1;
  for (auto& [name, samples] : ms) {
    Measurement m;
    m.name = name;
    m.params = {{"n", 10}};
    m.samples = samples;
    m.better = better;
    r.add(std::move(m));
  }
  return r;
}
Verdict v1(const Report& a, const Report& b) { return tg::report::compare(a, b, 0.05).rows.at(0).verdict; }

struct Run {
  int status;
  std::string out;
};
Run tg_report(const std::string& args) {
  FILE* p = ::popen((std::string(TG_REPORT_BIN) + " " + args + " 2>&1").c_str(), "r");
  REQUIRE(p);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int st = ::pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}
struct TmpDir {
  std::string path;
  std::vector<std::string> files;
  TmpDir() {
    char t[] = "/tmp/tg_report_testXXXXXX";
    REQUIRE(::mkdtemp(t));
    path = t;
  }
  std::string write(const std::string& name, const std::string& text) {
    const std::string p = path + "/" + name;
    write_file_atomic(p, text);
    files.push_back(p);
    return p;
  }
  ~TmpDir() {
    for (auto& f : files) std::remove(f.c_str());
    ::rmdir(path.c_str());
  }
};
}  // namespace

TEST_CASE("equal reports: same, ratio 1, geomean 1") {
  Report a = make({{"op", around(1e-6, 0.02)}});
  auto c = tg::report::compare(a, a, 0.05);
  CHECK(c.rows.at(0).verdict == Verdict::same);
  CHECK(c.rows.at(0).ratio == doctest::Approx(1.0));
  CHECK(c.geomean_cost == doctest::Approx(1.0));
  CHECK(c.slower == 0);
}

TEST_CASE("2x faster and 2x slower, disjoint intervals") {
  Report a = make({{"op", around(2e-6, 0.02)}});
  Report b = make({{"op", around(1e-6, 0.02)}});
  auto c = tg::report::compare(a, b, 0.05);
  CHECK(c.rows.at(0).verdict == Verdict::faster);
  CHECK(c.rows.at(0).ratio == doctest::Approx(0.5));
  CHECK(c.geomean_cost == doctest::Approx(0.5));
  CHECK(v1(b, a) == Verdict::slower);
  // For a throughput (higher is better) the same numbers mean the opposite.
  Report ha = make({{"bw", around(2.0, 0.02)}}, "higher");
  Report hb = make({{"bw", around(1.0, 0.02)}}, "higher");
  CHECK(v1(ha, hb) == Verdict::slower);
  CHECK(tg::report::compare(ha, hb, 0.05).geomean_cost == doctest::Approx(2.0));
}

TEST_CASE("overlapping intervals are the same even beyond the threshold") {
  Report a = make({{"op", around(1.0, 0.08)}});   // p10..p90 ~ 0.936..1.064, noise ~8%: not flagged
  Report b = make({{"op", around(1.07, 0.08)}});  // 7% slower, overlapping
  CHECK(v1(a, b) == Verdict::same);
}

TEST_CASE("disjoint but within the threshold is the same") {
  Report a = make({{"op", around(1.0, 0.005)}});
  Report b = make({{"op", around(1.03, 0.005)}});
  CHECK(v1(a, b) == Verdict::same);
  CHECK(tg::report::compare(a, b, 0.01).rows.at(0).verdict == Verdict::slower);
}

TEST_CASE("noisy: a flag on either side without a clear separation") {
  Report quiet = make({{"op", around(1.0, 0.02)}});
  Report loud = make({{"op", around(1.1, 0.5)}});
  REQUIRE(loud.measurements[0].stats.noisy);
  CHECK(v1(quiet, loud) == Verdict::noisy);
  CHECK(v1(loud, quiet) == Verdict::noisy);
  // Noisy but clearly separated is still a verdict.
  Report far = make({{"op", around(10.0, 0.5)}});
  REQUIRE(far.measurements[0].stats.noisy);
  CHECK(v1(quiet, far) == Verdict::slower);
}

TEST_CASE("missing and added measurements are listed, not judged") {
  Report a = make({{"op", around(1.0, 0.02)}, {"gone", around(1.0, 0.02)}});
  Report b = make({{"op", around(1.0, 0.02)}, {"new", around(1.0, 0.02)}});
  auto c = tg::report::compare(a, b, 0.05);
  REQUIRE(c.rows.size() == 3);
  CHECK(c.rows[1].verdict == Verdict::missing);
  CHECK(c.rows[2].verdict == Verdict::added);
  CHECK(c.missing == 1);
  CHECK(c.added == 1);
  CHECK(c.compared == 1);
  // Different params are a different measurement.
  Report p = a;
  p.measurements[0].params = {{"n", 11}};
  CHECK(tg::report::compare(a, p, 0.05).rows[0].verdict == Verdict::missing);
}

TEST_CASE("compare: traced rows against untraced ones are counted and refused, two traced runs are not") {
  Report plain = make({{"op", around(1.0, 0.02)}, {"other", around(1.0, 0.02)}});
  Report traced = plain;
  traced.trace_rows = true;  // as Experiment sets it under --trace
  traced.measurements.clear();
  for (Measurement m : plain.measurements) traced.add(std::move(m));
  CHECK(traced.measurements[0].traced);
  CHECK(tg::report::traced_refusal(tg::report::compare(plain, plain, 0.05), "a.json", "b.json") == "");
  CHECK(tg::report::traced_refusal(tg::report::compare(traced, traced, 0.05), "a.json", "b.json") == "");
  const auto c = tg::report::compare(plain, traced, 0.05);
  CHECK(c.traced_mixed == 2);
  const std::string why = tg::report::traced_refusal(c, "a.json", "b.json");
  CHECK(why.find("trace recorded in B (b.json) but not in A (a.json)") != std::string::npos);
  CHECK(why.find("--allow-traced") != std::string::npos);
  CHECK(tg::report::format_comparison(c, "a.json", "b.json", 0.05).find("WARNING (--allow-traced)") != std::string::npos);
  // The flag survives the JSON round trip, and an untraced row writes no "traced" key.
  const Report back = report_from_json(to_json(traced));
  CHECK(back.measurements[0].traced);
  CHECK(to_json(plain).find("\"traced\"") == std::string::npos);
}

TEST_CASE("--pair: A's executor=static rows against B's executor=torch_cuda_graph rows, the rest unpaired") {
  auto report = [](std::vector<std::pair<std::string, double>> rows) {
    Report r;
    r.meta.tool = "tg-test";
    for (auto& [executor, median] : rows) {
      Measurement m;
      m.name = "iteration";
      m.params = {{"batch", 32}, {"executor", executor}, {"mode", "train"}};
      m.samples = around(median, 0.01);
      r.add(std::move(m));
    }
    return r;
  };
  const Report a = report({{"static", 1e-3}, {"dynamic", 2e-3}, {"static_plain", 3e-3}});
  const Report b = report({{"torch_cuda_graph", 2e-3}, {"torch_eager_h2d", 2e-3}, {"torch_eager", 1e-3}});
  const auto c = tg::report::compare(a, b, 0.05,
                                     {tg::report::parse_pair("executor=static:torch_cuda_graph"),
                                      tg::report::parse_pair("executor=dynamic:torch_eager_h2d")});
  REQUIRE(c.rows.size() == 4);
  CHECK(c.compared == 2);
  CHECK(c.rows[0].verdict == Verdict::slower);  // torch's graph at 2 ms against static's 1 ms
  CHECK(c.rows[0].ratio == doctest::Approx(2.0));
  CHECK(c.rows[0].params.find("B: executor=torch_cuda_graph") != std::string::npos);
  CHECK(c.rows[1].verdict == Verdict::same);
  CHECK(c.rows[2].verdict == Verdict::missing);  // static_plain has no pair
  CHECK(c.rows[3].verdict == Verdict::added);    // torch_eager was matched by nothing
  CHECK(c.added == 1);
  CHECK_THROWS_AS(tg::report::parse_pair("executor=static"), std::invalid_argument);
  CHECK_THROWS_AS(tg::report::parse_pair("=a:b"), std::invalid_argument);
}

TEST_CASE("tg-report compare: exit 0 / 1 / 2") {
  TmpDir d;
  const auto base = d.write("a.json", to_json(make({{"op", around(2e-6, 0.02)}})));
  const auto faster = d.write("b.json", to_json(make({{"op", around(1e-6, 0.02)}})));
  Run r = tg_report("compare " + base + " " + base);
  CHECK(r.status == 0);
  CHECK(r.out.find("same") != std::string::npos);
  CHECK(r.out.find("geometric mean") != std::string::npos);
  r = tg_report("compare " + base + " " + faster);
  CHECK(r.status == 0);
  CHECK(r.out.find("faster") != std::string::npos);
  r = tg_report("compare " + faster + " " + base);
  CHECK(r.status == 1);
  CHECK(r.out.find("slower") != std::string::npos);
  r = tg_report("compare " + faster + " " + base + " --threshold 150");  // a 2x change is within 150%
  CHECK(r.status == 0);

  const auto missing = d.write("m.json", to_json(make({{"other", around(1e-6, 0.02)}})));
  r = tg_report("compare " + base + " " + missing);
  CHECK(r.status == 0);
  CHECK(r.out.find("missing in B") != std::string::npos);

  const auto broken = d.write("broken.json", "{\"schema_version\": 1}");
  r = tg_report("compare " + base + " " + broken);
  CHECK(r.status == 2);
  CHECK(r.out.find("broken.json") != std::string::npos);
  CHECK(r.out.find("missing") != std::string::npos);
  r = tg_report("compare " + base + " /nonexistent.json");
  CHECK(r.status == 2);
  CHECK(r.out.find("/nonexistent.json: cannot open") != std::string::npos);
  r = tg_report("compare " + base);
  CHECK(r.status == 2);
  r = tg_report("compare " + base + " " + base + " --threshold -5");
  CHECK(r.status == 2);
  r = tg_report("compare " + base + " " + base + " --pair executor=static");
  CHECK(r.status == 2);
  CHECK(r.out.find("give KEY=A:B") != std::string::npos);
  r = tg_report("compare " + base + " " + base + " --pair executor=static:torch_cuda_graph");
  CHECK(r.status == 0);
  r = tg_report("frobnicate");
  CHECK(r.status == 2);
}

TEST_CASE("tg-report compare --ignore-param matches runs that differ in one setting") {
  TmpDir d;
  auto with = [](int threads, double median) {
    Report r = make({{"op", around(median, 0.02)}});
    r.measurements[0].params.emplace("threads", threads);
    return to_json(r);
  };
  const auto a = d.write("t16.json", with(16, 1e-6));
  const auto b = d.write("t1.json", with(1, 2e-6));
  Run r = tg_report("compare " + a + " " + b);
  CHECK(r.status == 0);  // nothing matched: nothing is slower
  CHECK(r.out.find("missing in B") != std::string::npos);
  r = tg_report("compare " + a + " " + b + " --ignore-param threads");
  CHECK(r.status == 1);
  CHECK(r.out.find("slower") != std::string::npos);
  CHECK(r.out.find("threads=") == std::string::npos);

  // Two points that differ only in the ignored parameter cannot be matched: exit 2, naming both.
  Report two = make({});
  for (int threads : {1, 2}) {
    Measurement m;
    m.name = "op";
    m.params = {{"n", 10}, {"threads", threads}};
    m.samples = around(1e-6 * threads, 0.02);
    two.add(std::move(m));
  }
  const auto amb = d.write("two.json", to_json(two));
  r = tg_report("compare " + amb + " " + amb + " --ignore-param threads");
  CHECK(r.status == 2);
  CHECK(r.out.find("makes two measurements one") != std::string::npos);
  CHECK(r.out.find("threads=1") != std::string::npos);
  CHECK(r.out.find("threads=2") != std::string::npos);
}

TEST_CASE("tg-report markdown: a table per report, notes as a list") {
  TmpDir d;
  Report rep = make({{"op", around(2e-6, 0.02)}});
  rep.skip("kernel", "no GPU");
  const auto f = d.write("a.json", to_json(rep));
  Run r = tg_report("markdown " + f + " " + f);
  CHECK(r.status == 0);
  CHECK(r.out.find("## tg-test") != std::string::npos);
  CHECK(r.out.find("| measurement | params | median |") != std::string::npos);
  CHECK(r.out.find("| op | n=10 | 2.00 us |") != std::string::npos);
  CHECK(r.out.find("- kernel: no GPU") != std::string::npos);
  r = tg_report("markdown");
  CHECK(r.status == 2);
}

TEST_CASE("markdown: names and params holding pipes, backticks, asterisks or line breaks stay inside their cells") {
  using tg::report::markdown_text;
  CHECK(markdown_text("a|b") == "a\\|b");
  CHECK(markdown_text("x`y") == "x\\`y");
  CHECK(markdown_text("*bold* [link](u) <b>") == "\\*bold\\* \\[link\\](u) \\<b\\>");
  CHECK(markdown_text("line1\nline2\r\nline3\rend") == "line1<br>line2<br>line3<br>end");
  CHECK(markdown_text("tab\there\x1b[31m") == "tab here\\x1b\\[31m");
  CHECK(markdown_text("size_bytes=1e-06") == "size_bytes=1e-06");  // snake_case and numbers stay readable
  CHECK(markdown_text("_x_ # - + !") == "\\_x\\_ # - + !");
  CHECK(markdown_text("# heading") == "\\# heading");
  CHECK(markdown_text("- item") == "\\- item");
  CHECK(tg::report::markdown_code("plain") == "`plain`");
  CHECK(tg::report::markdown_code("a`b") == "``a`b``");
  CHECK(tg::report::markdown_code("`x``") == "``` `x`` ```");

  Report r = make({{"op|one", around(2e-6, 0.02)}});
  Measurement m;
  m.name = "two\nlines";
  m.params = {{"p", "x`y|z\nw"}, {"q", "*"}};
  m.samples = around(1e-6, 0.02);
  m.extra["a|b"] = 1.5;
  r.add(std::move(m));
  r.skip("part|x", "reason\nwith a break");
  const std::string md = tg::report::markdown(r, "dir/a`b.json");
  INFO(md);
  // Every table line has exactly nine unescaped pipes: eight cells, none split or shifted.
  int rows = 0;
  size_t start = 0;
  while (start < md.size()) {
    const size_t end = md.find('\n', start);
    const std::string line = md.substr(start, end - start);
    start = end + 1;
    if (line.empty() || line[0] != '|') continue;
    int pipes = 0;
    for (size_t i = 0; i < line.size(); ++i) pipes += line[i] == '|' && (i == 0 || line[i - 1] != '\\');
    CHECK_MESSAGE(pipes == 9, line);
    ++rows;
  }
  CHECK(rows == 4);  // header, rule, two measurements
  CHECK(md.find("| op\\|one | n=10 |") != std::string::npos);
  CHECK(md.find("| two<br>lines | p=x\\`y\\|z<br>w q=\\* |") != std::string::npos);
  CHECK(md.find("- part\\|x: reason<br>with a break") != std::string::npos);
  CHECK(md.find("``dir/a`b.json``") != std::string::npos);
}

TEST_CASE("reading: a uint64-max param is a real (not -1), and a 1.7e308 median prints as 1.7e+308") {
  Report r = make({{"op", {1.7e308}}});
  nlohmann::json j = nlohmann::json::parse(to_json(r));
  j["measurements"][0]["params"]["n"] = std::numeric_limits<uint64_t>::max();
  const Report back = report_from_json(j.dump(), "big.json");
  const Param& n = back.measurements.at(0).params.at("n");
  CHECK(n.kind() == Param::Kind::real);
  CHECK(n.as_real() == doctest::Approx(1.8446744073709552e19));
  const std::string md = tg::report::markdown(back, "big.json");
  INFO(md);
  CHECK(md.find("n=-1") == std::string::npos);
  CHECK(md.find("n=1.8446744073709552e+19") != std::string::npos);
  CHECK(md.find("| 1.7e+308 s |") != std::string::npos);
  CHECK(md.size() < 1000);  // no 309-digit numbers
  CHECK(format_value(1.7e308, "s") == "1.7e+308 s");
  CHECK(format_value(-3e200, "GB/s") == "-3e+200 GB/s");
  CHECK(format_value(1e300, "B").size() < 20);
}

TEST_CASE("compare: reports of two tools are refused, matching is by name and params, kinds included") {
  Report a = make({{"op", around(2e-6, 0.02)}}), b = a;
  b.meta.tool = "tg-other";
  CHECK(tg::report::comparable(a, b, "a.json", "b.json").find("A (a.json) is a tg-test report and B (b.json) a "
                                                              "tg-other report") == 0);
  CHECK(tg::report::comparable(a, a, "a.json", "a.json").empty());
  // "1" the string and 1 the number are two measurements; B lists them the other way round.
  Report x, y;
  x.meta.tool = y.meta.tool = "tg-test";
  x.add_time("m", {{"n", 1}}, around(1e-6, 0.02));
  x.add_time("m", {{"n", "1"}}, around(4e-6, 0.02));
  y.add_time("m", {{"n", "1"}}, around(4e-6, 0.02));
  y.add_time("m", {{"n", 1}}, around(1e-6, 0.02));
  const auto c = tg::report::compare(x, y, 0.05);
  CHECK(c.compared == 2);
  CHECK(c.same == 2);
  CHECK(c.missing == 0);
  CHECK(c.added == 0);
}

TEST_CASE("compare: 100,000 measurements against themselves all match (hash matching)") {
  Report r;
  r.meta.tool = "tg-test";
  const std::vector<double> s = around(1e-6, 0.02, 5);
  const Summary stats = summarize(s);
  for (int i = 0; i < 100000; ++i) {  // pushed directly: Report::add checks duplicates by a scan
    Measurement m;
    m.name = "op_" + std::to_string(i % 100);
    m.params = {{"i", i}};
    m.samples = s;
    m.stats = stats;
    r.measurements.push_back(std::move(m));
  }
  const auto c = tg::report::compare(r, r, 0.05);
  CHECK(c.compared == 100000);
  CHECK(c.same == 100000);
  CHECK(c.missing == 0);
  CHECK(c.added == 0);
  CHECK(c.rows.size() == 100000);
}

TEST_CASE("tg-report: another tool's report that matches nothing is exit 2, a closed or full stdout is handled") {
  TmpDir d;
  const auto a = d.write("a.json", to_json(make({{"op", around(2e-6, 0.02)}})));
  // A compared with a report of `tool` holding one row, `op`.
  const auto compare_with = [&](const std::string& tool, const std::string& op, const std::string& file) {
    Report b = make({{op, around(2e-6, 0.02)}});
    b.meta.tool = tool;
    return tg_report("compare " + a + " " + d.write(file, to_json(b)));
  };
  Run r = compare_with("tg-other", "other_op", "b.json");
  CHECK(r.status == 2);
  CHECK(r.out.find("compare two reports of the same tool") != std::string::npos);
  // Another tool's rows that do meet A's (tg-graph bench's and tg-train's) are compared.
  Run rc = compare_with("tg-graph bench", "op", "c.json");
  CHECK(rc.status == 0);
  CHECK(rc.out.find("1 compared") != std::string::npos);
  // popen's 2>&1 would send the message to /dev/full too: stderr to a file instead.
  const std::string err = d.path + "/err";
  d.files.push_back(err);
  const int full = std::system((std::string(TG_REPORT_BIN) + " markdown " + a + " >/dev/full 2>" + err).c_str());
  CHECK(WEXITSTATUS(full) == 2);
  FILE* f = std::fopen(err.c_str(), "r");
  REQUIRE(f);
  char buf[512] = {0};
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  CHECK(std::string(buf, n).find("tg-report: error: cannot write to stdout: No space left on device") !=
        std::string::npos);
  // A reader that stops after one byte: tg-report's own status is still 0 (no SIGPIPE death).
  const std::string piped = "bash -c '" + std::string(TG_REPORT_BIN) + " compare " + a + " " + a +
                            " 2>/dev/null | head -c 1 >/dev/null; exit ${PIPESTATUS[0]}'";
  const int st = std::system(piped.c_str());
  CHECK(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);
}
