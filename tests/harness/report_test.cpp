#include <doctest/doctest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "experiments/harness/report_io.h"
#include "experiments/harness/table.h"

using namespace tg::harness;

namespace {
Report sample_report() {
  Report r;
  r.meta.tool = "tg-test";
  r.meta.tool_version = "0.1.0";
  r.meta.utc_time = "2026-12-02T13:00:00Z";
  r.meta.min_reps = 5;
  r.meta.max_reps = 10;
  r.add_time("copy", {{"size_bytes", 1024}, {"direction", "h2d"}, {"pinned", true}}, {1e-6, 2e-6, 3e-6});
  auto& m = r.add_value("arena", {{"ratio", 0.5}}, 4096, "B");
  m.extra["GB/s"] = 12.5;
  r.skip("d2d", "no GPU, \"quoted\", with a comma");
  return r;
}
std::string slurp(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
bool exists(const std::string& p) { return ::access(p.c_str(), F_OK) == 0; }
}  // namespace

TEST_CASE("params keep their types and print canonically") {
  Params p{{"size_bytes", size_t{1} << 20}, {"direction", "h2d"}, {"ratio", 0.25}, {"pinned", false}};
  CHECK(p.at("size_bytes").kind() == Param::Kind::integer);
  CHECK(p.at("direction").kind() == Param::Kind::string);
  CHECK(p.at("ratio").kind() == Param::Kind::real);
  CHECK(p.at("pinned").kind() == Param::Kind::boolean);
  CHECK(params_str(p) == "direction=h2d pinned=false ratio=0.25 size_bytes=1048576");
}

TEST_CASE("a report round-trips through JSON and validates") {
  Report r = sample_report();
  const std::string text = to_json(r);
  CHECK(validate_report_json(text).empty());
  Report back = report_from_json(text);
  REQUIRE(back.measurements.size() == 2);
  const Measurement* c = back.find("copy", {{"size_bytes", 1024}, {"direction", "h2d"}, {"pinned", true}});
  REQUIRE(c != nullptr);
  CHECK(c->stats.median == doctest::Approx(2e-6));
  CHECK(c->samples.size() == 3);
  CHECK(back.measurements[1].unit == "B");
  CHECK(back.measurements[1].extra.at("GB/s") == 12.5);
  REQUIRE(back.notes.size() == 1);
  CHECK(back.notes[0].part == "d2d");
}

TEST_CASE("a report's resolved options round-trip with their types, and a report without them still reads") {
  Report r = sample_report();
  r.meta.options["cuda"] = {{"small_gemm", false}, {"pdl", true}};
  r.meta.options["passes"] = {{"gemm_updates", true}, {"gemm_update_min_tiles", 512}};
  const std::string text = to_json(r);
  CHECK(validate_report_json(text).empty());
  const auto j = nlohmann::json::parse(text);
  CHECK(j["run"]["options"]["cuda"]["small_gemm"] == false);
  CHECK(j["run"]["options"]["passes"]["gemm_update_min_tiles"] == 512);
  const Report back = report_from_json(text);
  REQUIRE(back.meta.options.size() == 2);
  CHECK(back.meta.options.at("cuda") == r.meta.options.at("cuda"));
  CHECK(back.meta.options.at("passes").at("gemm_update_min_tiles").kind() == Param::Kind::integer);
  CHECK(back.meta.options.at("passes").at("gemm_updates").kind() == Param::Kind::boolean);
  // Written before the options were recorded: valid, with none.
  auto old = nlohmann::json::parse(text);
  old["run"].erase("options");
  CHECK(validate_report_json(old.dump()).empty());
  CHECK(report_from_json(old.dump()).meta.options.empty());
  // Anything but groups of switches and integers is refused, named.
  auto bad = nlohmann::json::parse(text);
  bad["run"]["options"]["cuda"]["pdl"] = "on";
  CHECK(validate_report_json(bad.dump()).at(0) == "run.options.cuda.pdl: must be true, false or an integer, got \"on\"");
  bad["run"]["options"] = nlohmann::json::array();
  CHECK(validate_report_json(bad.dump()).at(0).find("run.options: must be an object") != std::string::npos);
}

TEST_CASE("the structural validator names the field and the problem") {
  auto j = nlohmann::json::parse(to_json(sample_report()));
  j["measurements"][1].erase("median");
  auto errs = validate_report_json(j.dump());
  REQUIRE_FALSE(errs.empty());
  CHECK(errs[0] == "measurements[1].median: missing");

  j = nlohmann::json::parse(to_json(sample_report()));
  j["measurements"][0]["samples"] = nlohmann::json::array();
  CHECK(validate_report_json(j.dump()).at(0).find("at least one sample") != std::string::npos);

  j = nlohmann::json::parse(to_json(sample_report()));
  j["schema_version"] = 99;
  CHECK(validate_report_json(j.dump()).at(0).find("not supported") != std::string::npos);

  j = nlohmann::json::parse(to_json(sample_report()));
  j["measurements"][0]["p10"] = 1.0;  // above the median
  CHECK(validate_report_json(j.dump()).at(0).find("p10 <= median <= p90") != std::string::npos);

  CHECK(validate_report_json("{not json").at(0).find("not valid JSON") != std::string::npos);
  CHECK_THROWS_WITH_AS(report_from_json("[]", "x.json"), doctest::Contains("x.json"), ReportError);
  CHECK_THROWS_WITH_AS(read_report("/nonexistent/r.json"), doctest::Contains("/nonexistent/r.json: cannot open"),
                       ReportError);
}

TEST_CASE("Report::add rejects what would make a bad report") {
  Report r;
  CHECK_THROWS_AS(r.add_time("x", {}, {}), std::invalid_argument);
  r.add_time("x", {{"n", 1}}, {1.0});
  CHECK_THROWS_WITH_AS(r.add_time("x", {{"n", 1}}, {1.0}), doctest::Contains("duplicate"), std::invalid_argument);
  CHECK_NOTHROW(r.add_time("x", {{"n", 2}}, {1.0}));
  CHECK_THROWS_AS(r.add_value("y", {}, 1.0, "B", "sideways"), std::invalid_argument);
}

TEST_CASE("CSV has one row per measurement with the union of parameter columns") {
  const std::string csv = to_csv(sample_report());
  std::istringstream in(csv);
  std::string header, row1, row2, extra;
  std::getline(in, header);
  std::getline(in, row1);
  std::getline(in, row2);
  CHECK_FALSE(std::getline(in, extra));
  CHECK(header.find("param.direction") != std::string::npos);
  CHECK(header.find("param.size_bytes") != std::string::npos);
  CHECK(header.find("extra.GB/s") != std::string::npos);
  CHECK(row1.rfind("tg-test,copy,s,lower,host,3,", 0) == 0);
  CHECK(row2.rfind("tg-test,arena,B,lower,value,1,", 0) == 0);
}

TEST_CASE("atomic write: the file appears whole, and nothing is left when writing fails") {
  char dir_tmpl[] = "/tmp/tg_harness_atomicXXXXXX";
  REQUIRE(::mkdtemp(dir_tmpl) != nullptr);
  const std::string dir = dir_tmpl;
  const std::string path = dir + "/r.json";
  write_file_atomic(path, "first\n");
  CHECK(slurp(path) == "first\n");
  CHECK_FALSE(exists(path + ".tmp"));
  write_file_atomic(path, "second\n");  // replaces
  CHECK(slurp(path) == "second\n");

  // The target became a folder after the run's check: refused before the rename, nothing
  // is left, the folder is intact.
  const std::string blocked = dir + "/blocked";
  REQUIRE(::mkdir(blocked.c_str(), 0755) == 0);
  { std::ofstream(blocked + "/keep") << "x"; }
  CHECK_THROWS_WITH_AS(write_file_atomic(blocked, "data"), doctest::Contains("is a folder"), std::runtime_error);
  CHECK_FALSE(exists(blocked + ".tmp"));
  CHECK(exists(blocked + "/keep"));

  // Failure at open: the folder does not exist. Neither file appears.
  CHECK_THROWS_WITH_AS(write_file_atomic(dir + "/missing/r.json", "data"), doctest::Contains("missing/r.json"),
                       std::runtime_error);
  CHECK_FALSE(exists(dir + "/missing"));

  // A link planted at path.tmp is not followed: what it points to keeps its content.
  const std::string victim = dir + "/victim", planted = dir + "/planted";
  { std::ofstream(victim) << "keep"; }
  REQUIRE(::symlink(victim.c_str(), (planted + ".tmp").c_str()) == 0);
  CHECK_THROWS_WITH_AS(write_file_atomic(planted, "data"), doctest::Contains("planted.tmp"), std::runtime_error);
  CHECK(slurp(victim) == "keep");
  CHECK_FALSE(exists(planted));
  ::unlink((planted + ".tmp").c_str());

  // Failure at write: a file size limit makes write() fail with EFBIG (in a child, so
  // that the limit and the ignored SIGXFSZ stay there). Neither file remains.
  const std::string big = dir + "/big.json";
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    try {
      write_file_atomic(big, std::string(1 << 16, 'x'));
      ::_exit(1);
    } catch (const std::runtime_error& e) {
      ::_exit(std::string(e.what()).find("write failed: File too large") != std::string::npos ? 0 : 2);
    }
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK_FALSE(exists(big));
  CHECK_FALSE(exists(big + ".tmp"));
  ::unlink(path.c_str());
  ::unlink(victim.c_str());
  ::unlink((blocked + "/keep").c_str());
  ::rmdir(blocked.c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("values format with SI prefixes and the table aligns columns") {
  CHECK(format_value(4.21e-6, "s") == "4.21 us");
  CHECK(format_value(1.5e-3, "s") == "1.50 ms");
  CHECK(format_value(250e-9, "s") == "250 ns");
  CHECK(format_value(2.0, "s") == "2.00 s");
  CHECK(format_value(512.0 * 1024 * 1024, "B") == "512 MiB");
  CHECK(format_value(55.0, "GB/s") == "55.0 GB/s");
  const std::string t = format_table({{"a", "bb"}, {"ccc", "d"}});
  CHECK(t == "a    bb\n-------\nccc  d\n");
  const std::string rt = report_table(sample_report());
  CHECK(rt.find("skipped d2d:") != std::string::npos);
  CHECK(rt.find("2.00 us") != std::string::npos);
}
