#!/usr/bin/env bash
# On the GPU machine: one tg-train binary under several environments, run alternately on one
# machine (replay timings move 1-3% between lent machines, so an A/B needs one session), each
# `tg-train --device 0 --quick --passes all`; prints, per run, the every-pass replay and the GEMM
# floor of each configuration in the form docs/results/h200-probes/*-ab.txt keep:
#   == LABEL ROUND
#   pass_replay MODE SWEEP MEDIAN UNIT
# Usage: bash scripts/device/ab-env.sh TG_TRAIN ROUNDS LABEL=VAR=VALUE[,VAR=VALUE] ... (LABEL= alone: no change)
set -u
bin=$1 rounds=$2
shift 2
for round in $(seq 1 "$rounds"); do
  for spec in "$@"; do
    label=${spec%%=*} settings=${spec#*=}
    echo "== $label $round"
    env ${settings//,/ } "$bin" --device 0 --quick --passes all 2> /dev/null |
      awk '/^(pass_replay|gemm_floor) / && (/^gemm_floor/ || / passes=all /) {
             mode = ""; sweep = ""; value = ""
             for (i = 2; i <= NF; ++i) {
               if ($i ~ /^mode=/) mode = substr($i, 6)
               else if ($i ~ /^sweep=/) sweep = substr($i, 7)
               else if (value == "" && $i ~ /^[0-9.]+$/) { value = $i " " $(i + 1) }
             }
             print $1, mode, sweep, value
           }'
  done
done
