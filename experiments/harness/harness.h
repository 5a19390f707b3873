#pragma once
// tg_harness: what every experiment binary (tg-*) is built on. Link `tg_harness`.
//
// The smallest complete experiment is experiments/noop/noop.cpp (tg-noop): an
// Experiment with its own flag (Experiment::add_option), run() with a body that times
// with time_host, records with report().add_time / skip, and ticks a Progress bar.
//
// run() does the rest: the common flags (--help with the example, --device N|auto|cpu,
// --list-devices, --quick, --repetitions N, --warmup N, --min-time S, --json FILE,
// --csv FILE), exit 2 on a bad flag/value/device/output path (never a fallback; numbers
// are decimal only, numbers.h), metadata (tool, version, git revision, command line,
// UTC time, host, CPU, GPUs, CUDA/cuBLAS/OpenBLAS versions, build type), the aligned
// table on stdout, atomic report files, and SIGINT/SIGTERM (the loops throw
// Interrupted; no file is written; exit 130/143; interrupt.h: a long loop of your own
// calls th::throw_if_interrupted() so that the run stops within a second). An
// exception from the body is exit 1; throw th::UsageError for a bad value of your own
// flag (exit 2). Print to stdout with th::print_stdout (output.h), never printf: a
// closed pipe then stops the printing and not the run, and a full disk is an error.
//
// Timing
//   time_host(opt, body, sync)  steady_clock around batch x body(), sync() before and
//                               after; one sample per repetition, in seconds per call.
//   time_gpu(opt, body, stream) CUDA events around batch x body(stream) (CUDA builds only,
//                               gpu_timing.h, inside #ifdef TWOGRAPH_HAVE_CUDA).
//   run_loop(opt, sample)       the loop alone, for anything else that yields seconds.
//   ex.loop() / ex.loop(batch)  the options from the flags; batch > 1 for bodies under ~1 us.
//   Loop rule: opt.warmup untimed calls, then samples until count >= min_reps AND
//   timed seconds >= min_time_s, never more than max_reps samples.
//
// Reports (report.h): Report::add_time(name, params, samples), add_value(name, params,
// value, unit, better), add(Measurement) for full control (unit, better = "higher"
// for throughputs, timer), skip(part, reason) for what was not measured and why.
// Measurement::extra holds derived numbers (GB/s, TFLOP/s). Statistics (stats.h):
// min, p10, median, p90, max, mean, noise = IQR/median, noisy when > 10%.
// Cold start (cold_start.h): the first CUDA calls of a process, one fresh child process
// per sample: cold_start_child() first thing in main(), measure_cold_start() in the body.
// Files: docs/report-format.md (fields, parameter names the plots read) and
// docs/report.schema.json. report_io.h reads, validates and writes them.
// Traces (--trace, docs/timelines.md): run_loop records the first --trace-iterations
// samples of each loop; a loop of your own makes a trace::LoopWindow and calls
// before_sample(i) at the top of each pass, so a trace stays a few steps long.
#include "experiments/harness/cold_start.h"
#include "experiments/harness/experiment.h"
#include "experiments/harness/interrupt.h"
#include "experiments/harness/measure.h"
#include "experiments/harness/nvtx.h"
#include "experiments/harness/output.h"
#include "experiments/harness/report.h"
#include "experiments/harness/report_io.h"
#include "experiments/harness/stats.h"
#include "experiments/harness/table.h"
#include "trace/recorder.h"
#ifdef TWOGRAPH_HAVE_CUDA
#include "experiments/harness/gpu_timing.h"
#endif
