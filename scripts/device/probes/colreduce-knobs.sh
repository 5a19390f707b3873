#!/usr/bin/env bash
# On the GPU machine, after `bash scripts/device/build-there.sh`: variant 4's candidate loads
# and block ends (kernels/cuda/reduce.cuh, "Variant 4's candidates"; TG_COLREDUCE_V4_LOADS,
# TG_COLREDUCE_V4_FINISH, all to the default's bits) against the default, on the three
# kernels the column frame drives, 64 and 256 MiB, each setting a fresh tg-kernels process.
# The settings run in rounds (TG_KNOB_ROUNDS, 2 when unset), the default first in each, so
# that a drift of the GPU over the session shows as a drift of the default. Each row is
# labelled with its setting; a table of the 64 MiB medians closes. A run takes ~2 s; runs
# that would start past 50 s are skipped, so the whole stays under a minute.
# Usage: bash scripts/device/probes/colreduce-knobs.sh [build-dir]
set -u
build=${1:-build/default}
bin="$build/experiments/kernels/tg-kernels"
if [ ! -x "$bin" ]; then
  echo "colreduce-knobs: no $bin; build it first: cmake --build $build --target tg-kernels" >&2
  exit 2
fi
res=$(mktemp -d)
trap 'rm -rf "$res"' EXIT
# label|VAR=VALUE ... (the empty setting is the default)
settings=(
  "default|"
  "loads=1|TG_COLREDUCE_V4_LOADS=1"
  "finish=1|TG_COLREDUCE_V4_FINISH=1"
  "finish=2|TG_COLREDUCE_V4_FINISH=2"
  "finish=3|TG_COLREDUCE_V4_FINISH=3"
  "loads=1,finish=3|TG_COLREDUCE_V4_LOADS=1 TG_COLREDUCE_V4_FINISH=3"
)
rounds=${TG_KNOB_ROUNDS:-2}
start=$SECONDS
for ((round = 1; round <= rounds; ++round)); do
  for s in "${settings[@]}"; do
    label=${s%%|*}
    vars=${s#*|}
    tag="$label#$round"
    if ((SECONDS - start > 50)); then
      echo "[$tag] skipped: past 50 s"
      continue
    fi
    # Variant 4 whatever the caller's environment says; only this setting's knobs.
    env -u TG_COLREDUCE_V4_LOADS -u TG_COLREDUCE_V4_FINISH TG_COLREDUCE=4 $vars timeout 20 "$bin" --device 0 \
      --ops reduce_sum_cols,layernorm_grad_gamma,layernorm_grad_gamma_beta --min-bytes $((64 << 20)) \
      --max-bytes $((256 << 20)) --no-matmul --csv "$res/$round-${label//[=,]/_}.csv" > "$res/run.txt" 2>&1
    rc=$?
    grep -E "^(d2d_copy|reduce_sum_cols|layernorm)" "$res/run.txt" | sed 's/  */ /g' | cut -c1-120 | sed "s/^/[$tag] /"
    [ "$rc" = 0 ] || { echo "[$tag] rc=$rc:"; tail -3 "$res/run.txt" | sed "s/^/[$tag]   /"; }
  done
done
# The 64 MiB medians side by side: us and % of the same run's copy.
echo "== 64 MiB medians, us (% of that run's d2d copy)"
printf "%-20s %18s %18s %18s %10s\n" setting reduce_sum_cols ln_grad_gamma ln_grad_gamma_beta d2d_copy
for ((round = 1; round <= rounds; ++round)); do
  for s in "${settings[@]}"; do
    label=${s%%|*}
    csv="$res/$round-${label//[=,]/_}.csv"
    [ -s "$csv" ] || continue
    awk -F, -v tag="$label#$round" 'NR == 1 { for (i = 1; i <= NF; ++i) col[$i] = i; next }
      $col["param.size_bytes"] == 67108864 {
        v[$col["name"]] = sprintf("%.1f (%.1f%%)", $col["median"] * 1e6, $col["extra.pct_of_copy"]) }
      END { printf "%-20s %18s %18s %18s %10s\n", tag, v["reduce_sum_cols"], v["layernorm_grad_gamma"],
                   v["layernorm_grad_gamma_beta"], substr(v["d2d_copy"], 1, index(v["d2d_copy"], " ") - 1) }' "$csv"
  done
done
echo "colreduce-knobs: $((SECONDS - start)) s"
