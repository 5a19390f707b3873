#!/usr/bin/env bash
# On the GPU machine, from the repository root, after `bash scripts/device/build-there.sh`:
# the memory-bound kernels of the fusion work (transpose, reduce_sum, layernorm_grad_gamma
# and layernorm_grad_gamma_beta) checked and measured.
#   1. their GPU tests (ctest -R), then every other GPU test (they all run these kernels)
#   2. compute-sanitizer memcheck over their test cases (skipped with KQ_MEMCHECK=0)
#   3. tg-kernels on their cases at 64 MiB and 256 MiB
#   4. last, a table: per case and size, the median time and pct_of_copy (the goal is >= 80)
# Logs, kernels-quality.json and .csv go to $OUT (default ./out). Exit status: the first failure.
# Usage: bash scripts/device/kernel-quality.sh [build-dir]   (default build/default)
set -u
build=${1:-build/default}
out=${OUT:-out}
mkdir -p "$out"
status=0
note() { echo "== $*" | tee -a "$out/kq-summary.txt"; }
keep() { [ "$status" -eq 0 ] && status=$1; }

cases='transpose,transpose_heads,reduce_sum_rows,reduce_sum_cols,layernorm_grad_gamma,layernorm_grad_gamma_beta'
tests='cuda (reduce|transpose|layernorm_grad_gamma|broadcast|reductions are deterministic|== cpu for every op)'

note "ctest: the kernels' own GPU tests"
ctest --test-dir "$build" -L gpu -R "tg_kernels_cuda_test:$tests" --output-on-failure > "$out/kq-ctest-kernels.log" 2>&1
rc=$?; keep $rc; note "rc=$rc: $(grep -E 'tests passed|tests failed' "$out/kq-ctest-kernels.log" | tail -1)"

note "ctest: every GPU test"
ctest --test-dir "$build" -L gpu --output-on-failure > "$out/kq-ctest-gpu.log" 2>&1
rc=$?; keep $rc; note "rc=$rc: $(grep -E 'tests passed|tests failed' "$out/kq-ctest-gpu.log" | tail -1)"

bin="$build/tests/kernels/tg_kernels_cuda_test"
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ "${KQ_MEMCHECK:-1}" != 0 ] && [ -x "$bin" ] && [ -x "$sanitizer" ]; then
  note "compute-sanitizer memcheck over the kernels' test cases"
  timeout "${KQ_MEMCHECK_TIMEOUT:-300}" "$sanitizer" --tool memcheck --error-exitcode 3 "$bin" \
    -tc='cuda reduce*,cuda transpose*,cuda layernorm_grad_gamma*' > "$out/kq-memcheck.log" 2>&1
  rc=$?; keep $rc; note "rc=$rc (124: timed out): $(grep -E 'ERROR SUMMARY' "$out/kq-memcheck.log" | tail -1)"
fi

kbin="$build/experiments/kernels/tg-kernels"
if [ ! -x "$kbin" ]; then
  note "tg-kernels not built at $kbin"
  exit 1
fi
note "tg-kernels --ops $cases at 64 MiB and 256 MiB"
"$kbin" --device 0 --ops "$cases" --min-bytes $((64 << 20)) --max-bytes $((256 << 20)) --no-matmul \
  --json "$out/kernels-quality.json" --csv "$out/kernels-quality.csv" > "$out/kq-tg-kernels.txt" 2>&1
rc=$?; keep $rc; note "rc=$rc"

# The table, from the csv (columns found by name): case, MiB, median us, GB/s, pct_of_copy.
if [ -s "$out/kernels-quality.csv" ]; then
  awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) col[$i] = i; next }
           { printf "%-27s %5d MiB %9.1f us %7.0f GB/s %6.1f %%\n", $col["name"], $col["param.size_bytes"] / 1048576,
                    $col["median"] * 1e6, $col["extra.GB/s"], $col["extra.pct_of_copy"] }' \
    "$out/kernels-quality.csv" | tee "$out/kq-table.txt"
else
  echo "no csv: see $out/kq-tg-kernels.txt"; tail -20 "$out/kq-tg-kernels.txt"
fi
exit $status
