#include "graph/corpus.h"

#include <fmt/format.h>

#include <stdexcept>

namespace tg {

namespace {

// splitmix64: a few integer operations, easy to repeat exactly in Python.
struct SplitMix {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};

constexpr const char* kWords[] = {"the",   "a",     "cat",   "dog",   "bird",  "sees",  "finds", "likes",
                                  "small", "big",   "red",   "green", "house", "tree",  "river", "stone",
                                  "runs",  "sleeps", "near", "under", "and",   "then",  "slowly", "home"};
constexpr int kWordCount = static_cast<int>(sizeof(kWords) / sizeof(kWords[0]));
constexpr int kSuccessors = 3;

}  // namespace

std::vector<int64_t> synthetic_corpus(int64_t tokens, uint64_t seed) {
  if (tokens < 0) throw std::invalid_argument(fmt::format("synthetic_corpus: {} tokens", tokens));
  SplitMix rng{seed};
  int next_word[kWordCount][kSuccessors];
  for (auto& row : next_word)
    for (int& w : row) w = static_cast<int>(rng.next() % kWordCount);
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(tokens));
  int word = 0;
  int64_t sentence = 0;
  while (static_cast<int64_t>(out.size()) < tokens) {
    for (const char* c = kWords[word]; *c; ++c) out.push_back(static_cast<unsigned char>(*c));
    // Every eighth word ends a sentence.
    if (++sentence % 8 == 0) out.push_back('.');
    out.push_back(' ');
    word = next_word[word][rng.next() % kSuccessors];
  }
  out.resize(static_cast<size_t>(tokens));
  return out;
}

int64_t corpus_tokens_for(int64_t batch, int64_t seq, int64_t steps) { return steps * batch * seq + 1; }

Feeds corpus_batch(const std::vector<int64_t>& stream, int64_t batch, int64_t seq, int64_t step) {
  if (batch <= 0 || seq <= 0 || step < 0)
    throw std::invalid_argument(fmt::format("corpus_batch: batch {}, seq {}, step {}", batch, seq, step));
  const int64_t need = corpus_tokens_for(batch, seq, step + 1);
  if (static_cast<int64_t>(stream.size()) < need)
    throw std::invalid_argument(fmt::format("corpus_batch: batch {} of {} x {} tokens needs a stream of {} tokens, "
                                            "this one has {}", step, batch, seq, need, stream.size()));
  std::vector<float> ids(static_cast<size_t>(batch * seq)), labels(ids.size());
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t start = (step * batch + b) * seq;
    for (int64_t s = 0; s < seq; ++s) {
      ids[static_cast<size_t>(b * seq + s)] = static_cast<float>(stream[static_cast<size_t>(start + s)]);
      labels[static_cast<size_t>(b * seq + s)] = static_cast<float>(stream[static_cast<size_t>(start + s + 1)]);
    }
  }
  return Feeds{{"ids", std::move(ids)}, {"labels", std::move(labels)}};
}

}  // namespace tg
