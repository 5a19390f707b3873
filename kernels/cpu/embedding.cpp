// embedding: rows of a table picked by ids; embedding_grad: each dy row added into its id's
// row, in the order of the ids (ascending position), in f32: the order the CUDA kernel sums
// in too (kernels/cuda/embedding.cu), so both give the same bits. An id outside the table
// is the caller's data: tg::InputError, which the executors rethrow naming the node.
#include <cstring>

#include "graph/errors.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/indices.h"

namespace tg::kernels {

namespace {

int64_t id_at(const TensorView& ids, int64_t t, int64_t vocab, const char* op) {
  int64_t id = -1;
  const bool whole = read_index(ids, t, id);
  if (!whole || id < 0 || id >= vocab)
    input_error("ids[{}] is {}; {} needs ids in [0, {}) (the table's rows): feed token ids of this vocabulary, or "
                "a larger table", t, whole ? std::to_string(id) : std::to_string(ids.data[t]), op, vocab);
  return id;
}

}  // namespace

void cpu_embedding(const float* table, int64_t vocab, int64_t dim, const TensorView& ids, float* out, int64_t n) {
  for (int64_t t = 0; t < n; ++t) {
    const int64_t id = id_at(ids, t, vocab, "embedding");
    std::memcpy(out + t * dim, table + id * dim, static_cast<size_t>(dim) * sizeof(float));
  }
}

void cpu_embedding_grad(const float* dy, const TensorView& ids, float* dtable, int64_t vocab, int64_t dim, int64_t n) {
  // Every id is checked before anything is written: a bad one leaves the output untouched.
  for (int64_t t = 0; t < n; ++t) id_at(ids, t, vocab, "embedding_grad");
  std::memset(dtable, 0, static_cast<size_t>(vocab * dim) * sizeof(float));
  for (int64_t t = 0; t < n; ++t) {
    float* row = dtable + id_at(ids, t, vocab, "embedding_grad") * dim;
    const float* d = dy + t * dim;
    for (int64_t j = 0; j < dim; ++j) row[j] += d[j];
  }
}

}  // namespace tg::kernels
