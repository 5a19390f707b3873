// dropout and rng_advance: the CPU reference of the mask kernels/philox.h defines, element by
// element; kernels/cuda/dropout.cu draws the same words, so both give the same bits.
#include <cstdint>

#include "graph/errors.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/indices.h"
#include "kernels/philox.h"

namespace tg::kernels {

namespace {

int64_t rng_word(const TensorView& rng, int64_t i, const char* what) {
  int64_t v = 0;
  if (!read_index(rng, i, v))
    input_error("dropout: the rng state's {} is {}, not a whole number; the rng state holds integers (graph/dropout.h)",
                what, rng.data[i]);
  return v;
}

// tg::InputError for a state that is no pair of whole numbers.
DropoutParams dropout_params_of(const TensorView& rng, const Attrs& at) {
  DropoutParams d = dropout_params(at.p, at.rng_stream);
  dropout_set_state(d, static_cast<uint64_t>(rng_word(rng, 0, "seed")),
                    static_cast<uint64_t>(rng_word(rng, 1, "offset")));
  return d;
}

}  // namespace

void cpu_dropout(const float* x, const TensorView& rng, float* y, int64_t n, const Attrs& at) {
  const DropoutParams d = dropout_params_of(rng, at);
  for (int64_t g = 0; g * kDropoutGroup < n; ++g) {
    const Philox4 words = dropout_words(d, static_cast<uint64_t>(g));
    for (int64_t k = 0; k < kDropoutGroup && g * kDropoutGroup + k < n; ++k) {
      const int64_t i = g * kDropoutGroup + k;
      y[i] = x[i] * dropout_factor(d, words.w[k]);
    }
  }
}

void cpu_rng_advance(const TensorView& rng) {
  // Unsigned, so that the offset wraps rather than overflows.
  switch (rng.dtype) {
    case DType::I64: ++reinterpret_cast<uint64_t*>(rng.data)[1]; return;
    case DType::I32: ++reinterpret_cast<uint32_t*>(rng.data)[1]; return;
    default: rng.data[1] += 1.0f; return;  // the reference interpreter's f32 whole numbers
  }
}

}  // namespace tg::kernels
