#pragma once
// A small text corpus generated on the spot, for language models to learn something real:
// sentences of a fixed 24-word vocabulary, each word followed by one of three successors
// drawn from a seeded table, the bytes of the text the tokens (ids below 128). A model can
// learn the letters inside a word exactly and the next word to one of three, so its loss
// falls from log(vocab) toward about log(3) / (letters per word). The same generator is
// experiments/peers/corpus.py, so that PyTorch trains on the same tokens.
#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace tg {

// The first `tokens` bytes of the corpus of `seed`.
std::vector<int64_t> synthetic_corpus(int64_t tokens, uint64_t seed = 1);

// Batch `step` of a token stream: row b reads the window at (step * batch + b) * seq, its
// labels the same window one token on (the next token at each place), as "ids" and "labels"
// [batch, seq] feeds. Throws std::invalid_argument naming the sizes when the stream is too
// short (corpus_tokens_for says how long it must be).
Feeds corpus_batch(const std::vector<int64_t>& stream, int64_t batch, int64_t seq, int64_t step);
int64_t corpus_tokens_for(int64_t batch, int64_t seq, int64_t steps);

}  // namespace tg
