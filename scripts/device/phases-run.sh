#!/usr/bin/env bash
# On the GPU machine, after scripts/device/build-there.sh: runs one phase of the
# H200 measurements and packs everything into $OUT/results-<phase>.tar.gz (the device
# tool brings back at most 8 files), printing a short summary last.
#   tests        ctest (cpu + gpu), compute-sanitizer memcheck and racecheck over the GPU test binaries
#   ctest        ctest alone;  sanitize-tests  the sanitizers over the GPU test binaries alone
#   exp:NAME     one experiment, full run (e.g. exp:launch)
#   sanitize     compute-sanitizer memcheck and racecheck over every experiment in --quick mode
#                (SAN_EXPERIMENTS="kernels train" for a subset; TG_SAN_TIMEOUT seconds per run)
#                (one repetition per measurement: the tools slow every launch down)
#   kernels      tg-kernels, tg-transfer, tg-matmul (full runs)
#   executors    tg-launch, tg-train, tg-memory, tg-shapes, tg-pipeline (full runs)
#   main         the main job (every experiment in quick mode) -> report/
# Usage: scripts/device/phases-run.sh PHASE [PHASE...]   (results-run.sh runs the reports docs/results keeps)
set -u
build=build/default
out=${OUT:-out}
mkdir -p "$out"
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
# compute-sanitizer TOOL NAME BINARY [ARGS]: one line "TOOL NAME: rc=.. ERROR SUMMARY: ..".
sanitize_one() {
  local tool=$1 name=$2; shift 2
  local extra=""
  [ "$tool" = memcheck ] && extra="--leak-check full"
  extra="$extra ${SAN_EXTRA:-}"
  timeout "${TG_SAN_TIMEOUT:-240}" compute-sanitizer --tool "$tool" $extra --report-api-errors no --error-exitcode 3 \
    "$@" > "$res/logs/$tool-$name.log" 2>&1
  local rc=$?
  say "$tool $name: rc=$rc $(grep -E 'ERROR SUMMARY' "$res/logs/$tool-$name.log" | tail -1)"
}
# memcheck and racecheck over the GPU test binaries, all at once; then the
# reliability tests alone, since they fill the device's memory on purpose.
sanitize_tests() {
  local t
  for t in $(find "$build/tests" -type f -perm -u+x \( -name '*cuda*' -o -name '*gpu*' \) ! -name '*reliability*'); do
    sanitize_one memcheck "$(basename "$t")" "$t" &
    sanitize_one racecheck "$(basename "$t")" "$t" &
  done
  wait
  # application-only: the fault test's child (tg-noop --fault sticky) writes out of
  # bounds on purpose; the test binary itself is what is checked here.
  for t in $(find "$build/tests" -type f -perm -u+x -name '*reliability*' ! -name '*oom*'); do
    SAN_EXTRA="--target-processes application-only" sanitize_one memcheck "$(basename "$t")" "$t" &
  done
  wait
  for t in $(find "$build/tests" -type f -perm -u+x -name '*reliability*oom*'); do
    sanitize_one memcheck "$(basename "$t")" "$t"
  done
}
run_ctest() {
  ctest --test-dir "$build" -j 4 --timeout 300 --output-on-failure > "$res/logs/ctest.log" 2>&1
  say "ctest rc=$?"; grep -E "tests passed|tests failed|Skipped|\(Failed\)" "$res/logs/ctest.log" | head -30 | tee -a "$summary"
}
nvidia-smi > "$res/logs/nvidia-smi.txt" 2>&1
for phase in "$@"; do
  case $phase in
    tests)
      run_ctest
      sanitize_tests ;;
    ctest)
      run_ctest ;;
    sanitize-tests)
      sanitize_tests ;;
    exp:*)
      run_exp "${phase#exp:}" ;;
    sanitize)
      # The experiments run at once (compute-sanitizer is bound by the host's cores, of
      # which the GPU machine has 16); each result is said as its job ends.
      for x in ${SAN_EXPERIMENTS:-noop kernels transfer matmul launch train memory shapes pipeline}; do
        bin=$(find "$build/experiments" -type f -name "tg-$x" -perm -u+x | head -n 1)
        [ -z "$bin" ] && { say "tg-$x: not built"; continue; }
        args="--device 0 --quick --repetitions 1 --warmup 0 --min-time 0"
        # Smaller sweeps where the tools would take many minutes (each flag is the
        # experiment's own; the report lists what was skipped).
        [ $x = launch ] && args="$args --ops 1 10 100"
        [ $x = transfer ] && args="$args --max-mib 64"
        # tg-kernels' matmul is n = 5000 in --quick: hours under racecheck; tg-matmul covers it.
        [ $x = kernels ] && args="$args --max-bytes 4194304 --no-matmul"
        [ $x = matmul ] && args="$args --max-n 1000"
        [ $x = train ] && args="$args --max-rows 512 --loss-steps 3"
        [ $x = shapes ] && args="$args --iterations 8"
        for tool in memcheck racecheck; do
          sanitize_one $tool "tg-$x" "$bin" $args &
        done
      done
      wait ;;
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
  # Packed after every phase: a run cut short by the time limit still brings back the phases done.
  tar -C "$res" -czf "$out/results-$(echo "$@" | tr ' :' '-_').tar.gz" .
done
cat "$summary"
