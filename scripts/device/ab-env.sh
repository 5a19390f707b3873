#!/usr/bin/env bash
# On the GPU machine: one tg-train binary under several option settings, run alternately on one
# machine (replay timings move 1-3% between lent machines, so an A/B needs one session), each
# `tg-train --device 0 --quick --passes all`; prints, per run, the every-pass replay and the GEMM
# floor of each configuration in the form docs/results/h200-probes/*-ab.txt keep:
#   == LABEL ROUND
#   pass_replay MODE SWEEP MEDIAN UNIT
# Usage: bash scripts/device/ab-env.sh TG_TRAIN ROUNDS 'LABEL=WORDS' ... where WORDS are more
# tg-train flags and VAR=VALUE environment settings (VAR in capitals), space-separated (LABEL= alone: no change), e.g.
#   bash scripts/device/ab-env.sh tg-train 2 streamk= 'tiled=--cuda-options gemm_update_streamk=0'
#   'late=--pass-options lanes_early_updates=0' 'nopdl=TG_CUDA_OPTIONS=pdl=0'
# (docs/architecture.md, Configuration, lists the options).
set -u
bin=$1 rounds=$2
shift 2
for round in $(seq 1 "$rounds"); do
  for spec in "$@"; do
    label=${spec%%=*} envs=() flags=()
    for word in ${spec#*=}; do
      if [[ $word =~ ^[A-Z_][A-Z0-9_]*= ]]; then envs+=("$word"); else flags+=("$word"); fi
    done
    echo "== $label $round"
    env ${envs[@]+"${envs[@]}"} "$bin" --device 0 --quick --passes all ${flags[@]+"${flags[@]}"} 2> /dev/null |
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
