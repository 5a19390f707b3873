"""graph/corpus.h's synthetic corpus, the same bytes: sentences of a fixed 24-word vocabulary,
each word followed by one of three successors from a seeded table (splitmix64), the bytes of
the text the token ids. `python3 corpus.py TOKENS [SEED]` prints them as hex."""
import sys

_MASK = (1 << 64) - 1
WORDS = ["the", "a", "cat", "dog", "bird", "sees", "finds", "likes",
         "small", "big", "red", "green", "house", "tree", "river", "stone",
         "runs", "sleeps", "near", "under", "and", "then", "slowly", "home"]
SUCCESSORS = 3


class _SplitMix:
    def __init__(self, seed):
        self.state = seed & _MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & _MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return z ^ (z >> 31)


def synthetic_corpus(tokens, seed=1):
    rng = _SplitMix(seed)
    table = [[rng.next() % len(WORDS) for _ in range(SUCCESSORS)] for _ in WORDS]
    out = bytearray()
    word, sentence = 0, 0
    while len(out) < tokens:
        out += WORDS[word].encode()
        sentence += 1
        if sentence % 8 == 0:
            out += b"."
        out += b" "
        word = table[word][rng.next() % SUCCESSORS]
    return list(out[:tokens])


def corpus_tokens_for(batch, seq, steps):
    return steps * batch * seq + 1


def corpus_batch(stream, batch, seq, step):
    """graph/corpus.h's corpus_batch: ids and labels [batch, seq] as lists of rows."""
    need = corpus_tokens_for(batch, seq, step + 1)
    if len(stream) < need:
        raise ValueError("corpus_batch: batch %d of %d x %d tokens needs %d tokens, the stream has %d"
                         % (step, batch, seq, need, len(stream)))
    ids, labels = [], []
    for b in range(batch):
        start = (step * batch + b) * seq
        ids.append(stream[start:start + seq])
        labels.append(stream[start + 1:start + seq + 1])
    return ids, labels


if __name__ == "__main__":
    n = int(sys.argv[1])
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    print(bytes(synthetic_corpus(n, seed)).hex())
