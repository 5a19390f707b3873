#pragma once
// A named phase of an experiment: a trace span (trace/trace.h) and, under Nsight Systems,
// an NVTX range of the same name. Free when neither records (one flag checked).
//
//   { TG_NVTX_RANGE("compile"); ... }   // the range ends with the scope
// The name may be a temporary's c_str(): it is copied only while something records.
#include "trace/trace.h"

#define TG_NVTX_RANGE(name) TG_TRACE_SCOPE_COPY(name)
