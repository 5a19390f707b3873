#include "kernels/backend.h"

#include "graph/errors.h"
#include "graph/quote.h"

namespace tg {

void require_kernel(const Backend& be, const char* executor, const std::string& node, OpKind op, DType dt) {
  if (!be.runs(op, dt))
    graph_error("{} on {}: node {} ({}) computes in {}, and this backend has no {} kernel for {}; run the model on "
                "the CPU backend, or in a precision whose kernels it has (--precision fp32)",
                executor, be.name(), quote_name(node), op_name(op), dtype_name(dt), dtype_name(dt), op_name(op));
}

}  // namespace tg
