#pragma once
// What Experiment::run does when the body throws: say what kind of failure it
// was, so that the user gets the right advice and the report records it as its
// top-level "error" (docs/report-format.md), next to the measurements taken before.
//
//   sticky_cuda_error  the CUDA context is lost (an illegal address, a kernel that
//                      trapped): every later CUDA call fails, so nothing more can be
//                      measured in this process; found by probing the context, not
//                      from the exception, because the call that reports a sticky
//                      error is usually not the one that caused it.
//   out_of_memory      tg::OutOfMemoryError (kernels/out_of_memory.h), or a CUDA
//                      error naming cudaErrorMemoryAllocation.
//   failure            anything else.
#include <exception>
#include <string>

#include "experiments/harness/report.h"

namespace tg::harness {

struct Failure {
  RunError error;      // for the report
  std::string advice;  // printed after the error ("" for none)
};

// probe_gpu: the run used a GPU, so check whether its context survived.
// `command_line` goes into the compute-sanitizer advice.
Failure classify_failure(const std::exception& e, bool probe_gpu, const std::string& command_line);

// "" while the current CUDA context works; else the error every call now returns,
// e.g. "cudaErrorIllegalAddress (an illegal memory access was encountered)".
// Synchronizes the device. Always "" in builds without CUDA.
std::string sticky_cuda_error();

}  // namespace tg::harness
