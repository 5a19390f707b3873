// The cold-start protocol (experiments/harness/cold_start.h) on the CPU: the child's
// lines and their parser, running a child process, and turning K children's lines into
// measurements. The CUDA steps themselves run in tg-transfer and tg-launch on a GPU.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "experiments/harness/cold_start.h"

using namespace tg::harness;

namespace {
std::vector<std::string> sh(const std::string& script) { return {"/bin/sh", "-c", script}; }

std::string what_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("a cold-start line survives the round trip through its parser") {
  const std::string text = cold_start_line({"context_creation", "first", 0, 0.25}) +
                           cold_start_line({"cudaMalloc", "second", 1024, 3.5e-6});
  const auto rows = parse_cold_start(text);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].call == "context_creation");
  CHECK(rows[0].occurrence == "first");
  CHECK(rows[0].size_bytes == 0);
  CHECK(rows[0].seconds == doctest::Approx(0.25));
  CHECK(rows[1].call == "cudaMalloc");
  CHECK(rows[1].size_bytes == 1024);
  CHECK(rows[1].seconds == doctest::Approx(3.5e-6));
  CHECK(parse_cold_start("").empty());
}

TEST_CASE("a malformed cold-start line is an error that names the line") {
  for (const char* bad : {"cold_start\tx\tfirst\t0\n", "cold_start\tx\tthird\t0\t1e-3\n", "other\tx\tfirst\t0\t1e-3\n",
                          "cold_start\tx\tfirst\t0\t-1\n", "cold_start\tx\tfirst\t0\t1e-3\textra\n",
                          "cold_start\tx\tfirst\tten\t1e-3\n", "cold_start\t\tfirst\t0\t1e-3\n"}) {
    CAPTURE(bad);
    const std::string msg = what_of([&] { parse_cold_start(std::string("cold_start\tok\tfirst\t0\t1\n") + bad); });
    CHECK(msg.find("line 2") != std::string::npos);
  }
}

TEST_CASE("run_child captures stdout and refuses a failed or missing command") {
  CHECK(run_child(sh("printf 'a\\nb\\n'")) == "a\nb\n");
  CHECK(what_of([] { run_child(sh("exit 3")); }).find("exit status 3") != std::string::npos);
  CHECK(what_of([] { run_child({"/nonexistent/tg-child"}); }).find("cannot start") != std::string::npos);
  CHECK_THROWS_AS(run_child({}), std::invalid_argument);
}

TEST_CASE("measure_cold_start gives one sample per child process for every step") {
  Report r;
  const std::string lines = cold_start_line({"context_creation", "first", 0, 0.2}) +
                            cold_start_line({"cudaMalloc", "first", 1024, 1e-3});
  measure_cold_start(r, sh("printf '" + lines + "'"), 3);
  REQUIRE(r.measurements.size() == 2);
  const Measurement* ctx = r.find("cold_start", {{"call", "context_creation"}, {"occurrence", "first"}});
  REQUIRE(ctx != nullptr);
  CHECK(ctx->samples.size() == 3);
  CHECK(ctx->stats.median == doctest::Approx(0.2));
  CHECK(ctx->extra.at("processes") == 3);
  const Measurement* m =
      r.find("cold_start", {{"call", "cudaMalloc"}, {"occurrence", "first"}, {"size_bytes", 1024}});
  REQUIRE(m != nullptr);
  CHECK(m->unit == "s");
  CHECK_THROWS_AS(measure_cold_start(r, sh("true"), 0), std::invalid_argument);
}

TEST_CASE("measure_cold_start refuses children that disagree on their steps, or print none") {
  char dir[] = "/tmp/tg_cold_start_XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string flag = std::string(dir) + "/seen";
  const std::string one = cold_start_line({"a", "first", 0, 1e-3});
  const std::string two = one + cold_start_line({"b", "first", 0, 1e-3});
  // The first child prints two steps, every later one a single step.
  const std::string script = "if [ -e " + flag + " ]; then printf '" + one + "'; else touch " + flag + "; printf '" +
                             two + "'; fi";
  Report r;
  CHECK(what_of([&] { measure_cold_start(r, sh(script), 2); }).find("every child must time the same steps") !=
        std::string::npos);
  CHECK(what_of([&] { measure_cold_start(r, sh("true"), 1); }).find("same steps") != std::string::npos);
  CHECK(r.measurements.empty());
  std::remove(flag.c_str());
  ::rmdir(dir);
}

TEST_CASE("cold_start_child runs only for its flag, in order, and reports bad devices and failed steps") {
  std::vector<std::string> ran;
  const ColdSteps steps = [&](int device) {
    CHECK(device == 2);
    return std::vector<ColdStep>{{"one", "first", 0, [&] { ran.push_back("one"); }},
                                 {"two", "second", 8, [&] { ran.push_back("two"); }}};
  };
  char self[] = "tg-x", flag[] = "--cold-start-child", two[] = "2", bad[] = "2x", other[] = "--quick";
  char* plain[] = {self, other};
  CHECK_FALSE(cold_start_child(2, plain, steps).has_value());
  CHECK(ran.empty());
  char* child[] = {self, flag, two};
  CHECK(cold_start_child(3, child, steps) == 0);
  CHECK(ran == std::vector<std::string>{"one", "two"});
  char* bad_device[] = {self, flag, bad};
  CHECK(cold_start_child(3, bad_device, steps) == 2);
  char* no_device[] = {self, flag};
  CHECK(cold_start_child(2, no_device, steps) == 2);
  const ColdSteps failing = [](int) {
    return std::vector<ColdStep>{{"boom", "first", 0, [] { throw std::runtime_error("no device"); }}};
  };
  CHECK(cold_start_child(3, child, failing) == 1);
}
