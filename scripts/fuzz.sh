#!/usr/bin/env bash
# Fuzz one target: configure and build the `fuzz` preset (clang, libFuzzer + ASan +
# UBSan, CPU-only), then run it for SECONDS (default 600) from its seeds.
#
#   bash scripts/fuzz.sh [SECONDS] [TARGET]
#
# TARGET (default graph-file):
#   graph-file     tests/fuzz/graph_file_fuzz.cpp: the graph-file loader and validator
#   graph-output   tests/fuzz/graph_output_fuzz.cpp: what tg-graph prints (names, messages,
#                  listings, DOT) and the interpreter on small valid graphs
#   report-loader  tests/fuzz/report_loader_fuzz.cpp: the report loader tg-report uses
#   onnx-import    tests/fuzz/onnx_import_fuzz.cpp: the ONNX importer from protobuf bytes, and
#                  what import writes read back by the project's own check
#   weights        tests/fuzz/weights_fuzz.cpp: the safetensors weights reader
#
# Needs clang and libFuzzer's runtime (Debian: apt-get install clang libclang-rt-14-dev).
# The working corpus and any crash input go to a fresh folder outside the repository
# (TG_FUZZ_WORK, default a new /tmp/tg-fuzz.XXXXXX); the seed folders are only read.
# TG_FUZZ_SUMMARY=FILE also writes the summary there (docs/results/fuzz-*.txt).
# TG_FUZZ_FLAGS adds libFuzzer flags (e.g. "-seed=1"). JOBS sets the build parallelism (default 2). Exit 0: no crash; 1: a crash, hang,
# leak or out-of-memory report (the input is saved, the path is printed); 2: bad usage.
set -euo pipefail

usage="usage: bash scripts/fuzz.sh [SECONDS] [graph-file|graph-output|report-loader|onnx-import|weights]   (SECONDS: a whole number >= 1, default 600)"
secs="${1:-600}"
target="${2:-graph-file}"
if ! [[ "$secs" =~ ^[0-9]+$ ]] || [ "$secs" -lt 1 ] || [ $# -gt 2 ]; then
  echo "$usage" >&2
  exit 2
fi
case "$target" in
  graph-file)    name=tg_graph_file_fuzz seeds=(tests/graphs tests/bad/graphs) dict=tests/fuzz/graph_file.dict
                 watched="graph tests/fuzz" ;;
  graph-output)  name=tg_graph_output_fuzz seeds=(tests/graphs tests/bad/graphs tests/bad/cli) dict=tests/fuzz/graph_file.dict
                 watched="graph kernels tests/fuzz" ;;
  report-loader) name=tg_report_loader_fuzz seeds=(tests/bad/reports tests/fuzz/report_seeds) dict=tests/fuzz/report.dict
                 watched="experiments/harness tools/tg-report tests/fuzz" ;;
  onnx-import)   name=tg_onnx_import_fuzz seeds=(tests/onnx/bad tests/bad/external_data tests/fuzz/onnx_seeds)
                 dict=tests/fuzz/onnx.dict watched="graph tools/tg-graph tests/fuzz" ;;
  weights)       name=tg_weights_fuzz seeds=(tests/fuzz/weights_seeds) dict=tests/fuzz/weights.dict
                 watched="graph tests/fuzz" ;;
  *) echo "scripts/fuzz.sh: unknown target '$target'; $usage" >&2; exit 2 ;;
esac
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# Two fuzz.sh started together share build/fuzz: one builds while the other waits.
mkdir -p build
(
  flock 9
  cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz -j "${JOBS:-2}"
) 9>build/.fuzz-build.lock
fuzzer="$root/build/fuzz/tests/fuzz/$name"

work="${TG_FUZZ_WORK:-$(mktemp -d /tmp/tg-fuzz.XXXXXX)}"
rm -rf "$work/corpus" "$work/artifacts"
mkdir -p "$work/corpus" "$work/artifacts"
log="$work/fuzz.log"

# -timeout: a hang is a bug (no input should take a second, let alone 10).
# -malloc_limit_mb: one allocation of 512 MiB from an input of a few KiB is a bug.
# -max_len: large enough for the biggest seed (a few KiB) with room to grow.
args=("$work/corpus" "${seeds[@]}"
      -dict="$dict" -max_total_time="$secs" -max_len=16384
      -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512
      -print_final_stats=1 -artifact_prefix="$work/artifacts/")
read -r -a extra <<<"${TG_FUZZ_FLAGS:-}"
args+=("${extra[@]}")
cmdline="build/fuzz/tests/fuzz/$name ${args[*]}"
started="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
# At the start: others may commit while it runs.
# shellcheck disable=SC2086  # $watched is a list of paths
rev="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- $watched 2>/dev/null || echo " ($watched: modified)")"
echo "fuzz: $cmdline" >&2
set +e
"$fuzzer" "${args[@]}" >"$log" 2>&1
rc=$?
set -e

libfuzzer_stat() { sed -n "s/^stat::$1: *//p" "$log" | tail -1; }
final="$(grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|INITED)' "$log" | tail -1 || true)"
cov="$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$final")"
ft="$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$final")"
corp="$(sed -n 's/.* corp: \([0-9]*\/[0-9a-zA-Z]*\).*/\1/p' <<<"$final")"
mapfile -t crashes < <(find "$work/artifacts" -type f | sort)
summary="$(cat <<EOF
target:      $name ($target)
command:     $cmdline
started:     $started (UTC)
host:        $(uname -srm), $(nproc) CPUs, $(clang++ --version | head -1)
commit:      $rev
duration:    ${secs} s requested
executions:  $(libfuzzer_stat number_of_executed_units)
exec/s:      $(libfuzzer_stat average_exec_per_sec)
coverage:    ${cov:-?} edges (cov), ${ft:-?} features (ft)
corpus:      ${corp:-?} (units/bytes) in $work/corpus, $(find "$work/corpus" -type f | wc -l) files; $(libfuzzer_stat new_units_added) new units added
peak rss:    $(libfuzzer_stat peak_rss_mb) MB
slowest:     $(libfuzzer_stat slowest_unit_time_sec) s
crashes:     ${#crashes[@]}${crashes:+ (${crashes[*]})}
fuzzer exit: $rc
--- libFuzzer's final lines:
$(grep -E '^(#[0-9]+[[:space:]]+DONE|Done [0-9]+ runs|stat::)' "$log")
EOF
)"
echo "$summary"
if [ -n "${TG_FUZZ_SUMMARY:-}" ]; then
  printf '%s\n' "$summary" >"$TG_FUZZ_SUMMARY"
fi
if [ "$rc" -ne 0 ] || [ "${#crashes[@]}" -ne 0 ]; then
  echo "fuzz: FAILED; the report is in $log" >&2
  grep -E 'BUG:|ERROR: |SUMMARY: |Test unit written to' "$log" >&2 || true
  exit 1
fi
echo "fuzz: ok, no crash in ${secs} s; log: $log" >&2
