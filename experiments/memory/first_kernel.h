#pragma once
// The kernel of the context-memory child's first launch (context_memory.h): it does nothing,
// so the step's bytes are those of loading its module, not of its work.
namespace tg::memory {

// Launches the empty kernel on the legacy default stream and waits for it; every CUDA call
// checked (throws tg::CudaError).
void launch_first_kernel();

}  // namespace tg::memory
