#!/usr/bin/env bash
# On the GPU machine, after build-there.sh: tg-train's pass sweep of this tree against an
# older revision's, alternating A B A B in one session (replay timings move 1-3% between
# lent machines, so an A/B needs one machine). The older tree comes as a tarball made here
# with `git archive REV | xz > .carry/ab-old.tar.xz`; only its tg-train is built.
# Usage: bash scripts/device/ab-train.sh [ENV_FOR_OLD]   (e.g. TG_CUDA_OPTIONS=small_gemm=0 for a tree
# that reads it; older trees read their own variables)
set -u
out=${OUT:-out}
mkdir -p "$out" /tmp/ab-old
tar -C /tmp/ab-old -xJf .carry/ab-old.tar.xz
(cd /tmp/ab-old && cmake --preset default -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc > /tmp/ab-configure.log 2>&1 &&
  cmake --build --preset default -j "$(nproc)" --target tg-train > /tmp/ab-build.log 2>&1) ||
  { echo "ab-train: the old tree did not build"; tail -20 /tmp/ab-build.log; exit 1; }
old_env=${1:-}
for round in 1 2; do
  env $old_env /tmp/ab-old/build/default/experiments/train/tg-train --device 0 --quick --passes sweep \
    --json "$out/ab_old_$round.json" > "$out/ab_old_$round.txt" 2>&1
  build/default/experiments/train/tg-train --device 0 --quick --passes sweep \
    --json "$out/ab_new_$round.json" > "$out/ab_new_$round.txt" 2>&1
  for side in old new; do
    echo "== round $round $side"
    grep -E "^pass_replay .*passes=(none|linear|all) .*(mlp_w256|transformer)" "$out/ab_${side}_$round.txt" |
      sed 's/  */ /g; s/pass_replay //; s/executor=static //; s/ sweep=[a-z0-9_]*//' | cut -c1-150 | head -12
  done
done
