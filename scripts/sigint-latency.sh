#!/usr/bin/env bash
# How long each experiment binary takes to stop after SIGINT (or SIGTERM), on the CPU
# backend: each is started with --json/--csv into a temp folder, signalled DELAY seconds
# after it printed "<tool>: device ...", and timed until it exits. Prints one line per
# (binary, delay): the seconds, the exit status, whether the watchdog had to force the
# exit (the body did not reach a check of the signal within a second; interrupt.h), and
# whether anything was left in the folder.
#   scripts/sigint-latency.sh BUILD_DIR [SIGNAL [DELAYS...]]   e.g. build/cpu INT 0.5 2 5
set -u
build=${1:?usage: sigint-latency.sh BUILD_DIR [SIGNAL [DELAYS...]]}
sig=${2:-INT}
shift 2 2>/dev/null
delays=("$@")
[ ${#delays[@]} -eq 0 ] && delays=(0.5 2 5)
cases=(
  "noop/tg-noop --device cpu --repetitions 100000000 --min-time 600"
  "launch/tg-launch --device cpu"
  "transfer/tg-transfer --device cpu"
  "matmul/tg-matmul --device cpu"
  "train/tg-train --device cpu"
  "memory/tg-memory --device cpu"
  "shapes/tg-shapes --device cpu"
  "pipeline/tg-pipeline --device cpu"
)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '%-12s %7s %8s %5s %-7s %s\n' binary delay_s stop_s exit forced left
for c in "${cases[@]}"; do
  read -r rel args <<<"$c"
  bin=$build/experiments/$rel
  tool=$(basename "$bin")
  [ -x "$bin" ] || { echo "$tool: not built, skipped"; continue; }
  for d in "${delays[@]}"; do
    rm -rf "$work/out" && mkdir -p "$work/out"
    # shellcheck disable=SC2086
    "$bin" $args --json "$work/out/r.json" --csv "$work/out/r.csv" >/dev/null 2>"$work/err" &
    pid=$!
    for _ in $(seq 600); do grep -q "^$tool: device" "$work/err" && break; sleep 0.1; done
    sleep "$d"
    if ! kill -0 "$pid" 2>/dev/null; then
      wait "$pid"
      echo "$tool: ended (exit $?) before the signal at ${d} s"
      continue
    fi
    t0=$(date +%s.%N)
    kill -"$sig" "$pid"
    wait "$pid"
    rc=$?
    t1=$(date +%s.%N)
    forced=no
    grep -q "stopped by force" "$work/err" && forced=yes
    left=$(ls -A "$work/out" | tr '\n' ' ')
    printf '%-12s %7s %8.3f %5d %-7s %s\n' "$tool" "$d" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "$rc" "$forced" "${left:-none}"
  done
done
