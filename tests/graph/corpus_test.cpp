// graph/corpus.h: the synthetic text, its batches, and the same bytes from the Python
// generator PyTorch's loss curve trains on (experiments/peers/corpus.py).
#include "graph/corpus.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>

namespace tg {

TEST_CASE("synthetic_corpus: text of the word list, a prefix of any longer corpus, the seed changes it") {
  const std::vector<int64_t> a = synthetic_corpus(4000);
  REQUIRE(a.size() == 4000);
  for (int64_t t : a) CHECK((t == ' ' || t == '.' || (t >= 'a' && t <= 'z')));
  const std::vector<int64_t> longer = synthetic_corpus(9000);
  CHECK(std::equal(a.begin(), a.end(), longer.begin()));
  CHECK(synthetic_corpus(4000, 2) != a);
  CHECK(synthetic_corpus(0).empty());
  CHECK_THROWS_AS(synthetic_corpus(-1), std::invalid_argument);
}

TEST_CASE("corpus_batch: consecutive windows, the labels one token on, a short stream refused") {
  const int64_t batch = 3, seq = 5, steps = 4;
  const std::vector<int64_t> s = synthetic_corpus(corpus_tokens_for(batch, seq, steps));
  for (int64_t step = 0; step < steps; ++step) {
    const Feeds f = corpus_batch(s, batch, seq, step);
    REQUIRE(f.at("ids").size() == static_cast<size_t>(batch * seq));
    REQUIRE(f.at("labels").size() == static_cast<size_t>(batch * seq));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < seq; ++i) {
        const size_t at = static_cast<size_t>((step * batch + b) * seq + i), k = static_cast<size_t>(b * seq + i);
        CHECK(f.at("ids")[k] == static_cast<float>(s[at]));
        CHECK(f.at("labels")[k] == static_cast<float>(s[at + 1]));
      }
  }
  try {
    corpus_batch(s, batch, seq, steps);
    FAIL("a batch past the stream was given");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("needs a stream of 76 tokens, this one has 61") != std::string::npos);
  }
}

// ctest runs this from the repository's root (twograph_add_test's working directory).
TEST_CASE("synthetic_corpus == experiments/peers/corpus.py, byte for byte") {
  const char* script = "experiments/peers/corpus.py";
  if (!std::ifstream(script)) {
    std::printf("TG_SKIP: %s not found: run from the repository's root\n", script);
    return;
  }
  const int64_t n = 20000;
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(("python3 " + std::string(script) + " 20000 1").c_str(), "r"), pclose);
  REQUIRE(p);
  std::string hex;
  std::array<char, 4096> buf{};
  size_t got = 0;
  while ((got = fread(buf.data(), 1, buf.size(), p.get())) > 0) hex.append(buf.data(), got);
  while (!hex.empty() && (hex.back() == '\n' || hex.back() == '\r')) hex.pop_back();
  std::string want;
  for (int64_t t : synthetic_corpus(n)) {
    char two[3];
    std::snprintf(two, sizeof two, "%02x", static_cast<unsigned>(t));
    want += two;
  }
  CHECK(hex.size() == want.size());
  CHECK(hex == want);
}

}  // namespace tg
