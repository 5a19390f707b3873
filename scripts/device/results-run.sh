#!/usr/bin/env bash
# On the GPU machine, after scripts/device/build-there.sh: runs one phase of the
# H200 measurements and packs everything into $OUT/results-<phase>.tar.gz (the device
# tool brings back at most 8 files), printing a short summary last.
#   tests        ctest (cpu + gpu), compute-sanitizer memcheck over the GPU test binaries
#   kernels      tg-kernels, tg-transfer, tg-matmul (full runs)
#   executors    tg-launch, tg-train, tg-memory, tg-shapes, tg-pipeline (full runs)
#   main         the main job (every experiment in quick mode) -> report/
# Usage: scripts/device/results-run.sh PHASE [PHASE...]
set -u
build=build/default
out=${OUT:-out}
res=$(mktemp -d)
mkdir -p "$res/results" "$res/logs"
summary="$res/summary.txt"
say() { echo "$*" | tee -a "$summary"; }
run_exp() {  # name [args...]
  local name=$1; shift
  local bin
  bin=$(find "$build/experiments" -type f -name "tg-$name" -perm -u+x | head -n 1)
  if [ -z "$bin" ]; then say "tg-$name: not built, skipped"; return; fi
  local t0=$SECONDS
  timeout "${TG_EXP_TIMEOUT:-240}" "$bin" --device 0 "$@" --json "$res/results/$name.json" --csv "$res/results/$name.csv" \
    > "$res/results/$name.txt" 2> "$res/logs/$name.stderr"
  say "tg-$name $*: rc=$? in $((SECONDS - t0)) s"
}
nvidia-smi > "$res/logs/nvidia-smi.txt" 2>&1
for phase in "$@"; do
  case $phase in
    tests)
      ctest --test-dir "$build" -j 4 --timeout 300 --output-on-failure > "$res/logs/ctest.log" 2>&1
      say "ctest rc=$?"; grep -E "tests passed|tests failed|Skipped|\(Failed\)" "$res/logs/ctest.log" | head -30 | tee -a "$summary"
      for t in $(find "$build/tests" -type f -perm -u+x \( -name '*cuda*' -o -name '*gpu*' \)); do
        n=$(basename "$t")
        timeout 300 compute-sanitizer --tool memcheck --leak-check full --report-api-errors no --error-exitcode 3 "$t" > "$res/logs/memcheck-$n.log" 2>&1
        say "memcheck $n: rc=$? $(grep -E 'ERROR SUMMARY' "$res/logs/memcheck-$n.log" | tail -1)"
      done ;;
    kernels)
      run_exp kernels; run_exp transfer; run_exp matmul ;;
    executors)
      run_exp launch; run_exp train; run_exp memory; run_exp shapes; run_exp pipeline ;;
    main)
      t0=$SECONDS
      timeout 540 scripts/run-main-job "$build" "$res/report" > "$res/logs/main-job.log" 2>&1
      say "main job rc=$? in $((SECONDS - t0)) s"; tail -15 "$res/logs/main-job.log" >> "$summary" ;;
    *) say "unknown phase $phase" ;;
  esac
done
tar -C "$res" -czf "$out/results-$(echo "$@" | tr ' ' '-').tar.gz" .
cat "$summary"
