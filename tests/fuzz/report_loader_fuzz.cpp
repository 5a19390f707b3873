// libFuzzer target: the input bytes are a report file (docs/report-format.md), read
// the way tg-report reads one (harness::report_from_json), then everything tg-report
// does with a report it accepted. A ReportError naming the file is the expected
// answer to a bad one. A bug aborts:
//  - any other exception, from the loader or from what runs after it (a report the
//    validator passed but the reader cannot convert, markdown, compare, CSV);
//  - validate_report_json and report_from_json disagreeing about a text;
//  - a loaded report whose JSON does not load again, or loads as another report;
//  - a report that, compared with itself, is called faster or slower.
#include <cstdint>
#include <exception>
#include <string>

#include "experiments/harness/report_io.h"
#include "tests/fuzz/fuzz_util.h"
#include "tools/tg-report/compare.h"

namespace {

constexpr const char* kSource = "fuzz.json";

[[noreturn]] void bug(const std::string& what) { tg::fuzz::bug("report_loader_fuzz", what); }

tg::harness::Report load(const std::string& text, const char* what) {
  try {
    return tg::harness::report_from_json(text, kSource);
  } catch (const tg::harness::ReportError& e) {
    bug(std::string(what) + " is refused: " + e.what() + "\n--- text:\n" + text.substr(0, 4000));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace th = tg::harness;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const bool valid = th::validate_report_json(text).empty();
    th::Report r;
    try {
      r = th::report_from_json(text, kSource);
    } catch (const th::ReportError& e) {
      if (valid) bug(std::string("validate_report_json passes a text that report_from_json refuses: ") + e.what());
      if (std::string(e.what()).rfind(kSource, 0) != 0) bug(std::string("a ReportError without the file name: ") + e.what());
      return 0;
    }
    if (!valid) bug("report_from_json accepts a text that validate_report_json refuses");

    const std::string saved = th::to_json(r);
    const th::Report back = load(saved, "the saved form of a loaded report");
    if (th::to_json(back) != saved) bug("save, load and save again gives other text");
    (void)th::to_csv(r);
    (void)tg::report::markdown(r, kSource);
    const tg::report::Comparison self = tg::report::compare(r, r, 0.05);
    if (self.faster != 0 || self.slower != 0)
      bug("a report compared with itself has " + std::to_string(self.faster) + " faster and " +
          std::to_string(self.slower) + " slower measurements");
    (void)tg::report::format_comparison(self, kSource, kSource, 0.05);
  } catch (const std::exception& e) {
    bug("unexpected exception " + tg::fuzz::type_name(typeid(e)) + ": " + e.what());
  }
  return 0;
}
