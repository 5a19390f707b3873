#include "kernels/backend.h"

#include <fmt/format.h>

#include <stdexcept>

#include "graph/errors.h"
#include "graph/quote.h"
#include "kernels/communicator.h"

namespace tg {

void require_kernel(const Backend& be, const char* executor, const std::string& node, OpKind op, DType dt) {
  if (!be.runs(op, dt))
    graph_error("{} on {}: node {} ({}) computes in {}, and this backend has no {} kernel for {}; run the model on "
                "the CPU backend, or in a precision whose kernels it has (--precision fp32)",
                executor, be.name(), quote_name(node), op_name(op), dtype_name(dt), dtype_name(dt), op_name(op));
}

void Backend::set_communicator(std::shared_ptr<Communicator> c) {
  if (c && c->on_host() != (kind() == DeviceKind::cpu))
    throw std::invalid_argument(fmt::format("set_communicator: a {} communicator reduces {} memory, but the backend {} "
                                            "holds {} memory; join the CPU backend to a thread group and a CUDA "
                                            "backend to NCCL", c->kind(), c->on_host() ? "host" : "GPU", name(),
                                            kind() == DeviceKind::cpu ? "host" : "GPU"));
  comm_ = std::move(c);
}

int Backend::world_size() const { return comm_ ? comm_->world_size() : 1; }

}  // namespace tg
