#!/usr/bin/env bash
# On the GPU machine, from the repository root, after `bash scripts/device/build-there.sh`:
# the checks and first measurements of the graph passes and their kernels (docs/compiler.md).
#   ctest (every test, output of failures), compute-sanitizer memcheck over the fused and
#   reworked kernels' GPU tests, tg-kernels on their cases, tg-train --quick with the pass
#   sweep (and again with the small-GEMM kernel off, --cuda-options small_gemm=0: every GEMM on cuBLASLt), tg-launch --quick with every pass, tg-train with GEMM tuning (--cuda-options gemm_autotune=1). Everything lands in $OUT/fusion-run.tar.gz
#   (plus the JSON reports beside it); the summary is printed last.
# Usage: bash scripts/device/fusion-run.sh [build-dir]
set -u
build=${1:-build/default}
out=${OUT:-out}
mkdir -p "$out"
res=$(mktemp -d)
summary="$res/summary.txt"
say() { echo "$*" | tee -a "$summary"; }
t0=$SECONDS
ctest --test-dir "$build" -j6 --timeout 300 --output-on-failure > "$res/ctest.log" 2>&1
say "ctest rc=$? in $((SECONDS - t0)) s: $(grep -E 'tests passed|tests failed' "$res/ctest.log" | tail -1)"
grep -E "\(Failed\)|Timeout" "$res/ctest.log" | head -20 | tee -a "$summary"
t0=$SECONDS
# TG_FUSION_MEMCHECK=0 skips this memcheck (the kernels' one) when they have not changed since the last.
[ "${TG_FUSION_MEMCHECK:-1}" = 0 ] || timeout "${TG_SAN_TIMEOUT:-200}" compute-sanitizer --tool memcheck --leak-check full --error-exitcode 3 \
  "$build/tests/kernels/tg_kernels_cuda_test" \
  -tc='cuda fused*,cuda small GEMM*,cuda skinny*,cuda GEMM family*,cuda GEMM with*,cuda heads*,cuda sgd_multi*,cuda == cpu for every op*,cuda reduce*,cuda transpose*,cuda layernorm_grad_gamma*,cuda matmul*,cuda GEMM tuning*' \
  > "$res/memcheck.log" 2>&1
say "memcheck rc=$? in $((SECONDS - t0)) s: $(grep -E 'ERROR SUMMARY' "$res/memcheck.log" | tail -1)"
t0=$SECONDS
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 "$build/tests/static/tg_static_cuda_test" -tc='*lanes*' \
  > "$res/memcheck-lanes.log" 2>&1
say "memcheck (lanes) rc=$? in $((SECONDS - t0)) s: $(grep -E 'ERROR SUMMARY' "$res/memcheck-lanes.log" | tail -1)"
kernels='add,mul,relu,scale,bias_add,fused_elementwise,sgd_momentum,sgd_momentum_multi,transpose,transpose_heads,reduce_sum_rows,reduce_sum_cols,layernorm_grad_gamma,layernorm_grad_gamma_beta,softmax,layernorm'
t0=$SECONDS
timeout 180 "$build/experiments/kernels/tg-kernels" --device 0 --ops "$kernels" --min-bytes $((64 << 20)) \
  --max-bytes $((256 << 20)) --no-matmul --json "$out/kernels_fusion.json" --csv "$res/kernels.csv" > "$res/kernels.txt" 2>&1
say "tg-kernels rc=$? in $((SECONDS - t0)) s"
[ -s "$res/kernels.csv" ] && awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) col[$i] = i; next }
  { printf "  %-26s %4d MiB %9.1f us %6.1f %%   back to back %9.1f us %6.1f %%\n", $col["name"],
           $col["param.size_bytes"] / 1048576, $col["median"] * 1e6, $col["extra.pct_of_copy"],
           $col["extra.back_to_back_s"] * 1e6, $col["extra.back_to_back_pct_of_copy"] }' "$res/kernels.csv" | tee -a "$summary"
# The same kernels timed plain (the host's enqueueing inside each sample), for comparison.
timeout 180 "$build/experiments/kernels/tg-kernels" --device 0 --ops "$kernels" --min-bytes $((64 << 20)) \
  --max-bytes $((256 << 20)) --no-matmul --plain-timing --csv "$res/kernels_plain.csv" > "$res/kernels_plain.txt" 2>&1
say "tg-kernels --plain-timing rc=$?"
[ -s "$res/kernels_plain.csv" ] && awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) col[$i] = i; next }
  { printf "  plain %-26s %4d MiB %9.1f us %6.1f %%\n", $col["name"], $col["param.size_bytes"] / 1048576,
           $col["median"] * 1e6, $col["extra.pct_of_copy"] }' "$res/kernels_plain.csv" | grep -E "copy|reduce|layernorm_grad" | tee -a "$summary"
# One tg-train --quick pass sweep into $out/FILE.json (stdout, stderr: $res/FILE.txt, .err);
# the summary gets its rows matching PATTERN. FLAGS: more tg-train flags (--cuda-options,
# --pass-options: the report records both) or "", PASSES: what --passes measures (sweep when not given).
train_sweep() {
  local label=$1 file=$2 pattern=$3 flags=$4 passes=${5:-sweep} t0=$SECONDS
  timeout 300 "$build/experiments/train/tg-train" --device 0 --quick --passes "$passes" $flags \
    --json "$out/$file.json" > "$res/$file.txt" 2> "$res/$file.err"
  say "tg-train $label rc=$? in $((SECONDS - t0)) s"; tail -2 "$res/$file.err" | tee -a "$summary"
  grep -E "$pattern" "$res/$file.txt" | sed 's/  */ /g' | cut -c1-200 | tee -a "$summary"
}
# Which sweeps run (TG_FUSION_SWEEPS, space-separated: defaults cublaslt tuned late nogemm noheads noskinny nostreamk gemmside; the
# first four when unset). $OUT gets one JSON
# per sweep: keep the list short enough that $OUT holds at most 8 files.
sweeps=${TG_FUSION_SWEEPS:-defaults cublaslt tuned late}
for sw in $sweeps; do
  case $sw in
    defaults) train_sweep "(defaults)" train_passes "^(pass_replay|gemm_floor|loss_curve .*passes)" "" ;;
    # The small-GEMM kernel (docs/architecture.md) against cuBLASLt: the same sweep with it off.
    cublaslt) train_sweep small_gemm=0 train_passes_cublaslt "^pass_replay .*passes=(none|all) " \
      "--cuda-options small_gemm=0" ;;
    # GEMM tuning (cuBLASLt's candidates timed per shape, the fastest kept).
    tuned) train_sweep gemm_autotune=1 train_passes_tuned "^(pass_replay .*passes=(none|all) |gemm_floor)" \
      "--cuda-options gemm_autotune=1" ;;
    # Early updates of the lanes pass off (on by default: large updates apart, on the side stream
    # as soon as they can run).
    late) train_sweep lanes_early_updates=0 train_passes_late "^(pass_replay .*passes=(none|lanes|all) )" \
      "--pass-options lanes_early_updates=0" ;;
    # The GEMM updates of the optimizer pass off (matmul_sgd_momentum; on by default): the
    # large weights' gradients through cuBLASLt and their updates apart, as before.
    nogemm) train_sweep gemm_updates=0 train_passes_nogemm "^(pass_replay .*passes=(none|optimizer|all) )" \
      "--pass-options gemm_updates=0" ;;
    # Every pass but heads, against none (its own JSON; compare with train_passes.json's all rows).
    noheads) train_sweep "--passes all but heads" train_passes_noheads "^pass_replay .*passes=(none|bn_fold,conv,attention,rows,linear,elementwise,optimizer,low_copies,lanes) " "" bn_fold,conv,attention,rows,linear,elementwise,optimizer,low_copies,lanes ;;
    # The skinny-GEMM kernels off (on by default): the thin products on cuBLASLt (its JSON goes
    # into the tarball, not beside it).
    noskinny) train_sweep skinny_gemm=0 train_passes_noskinny "^pass_replay .*passes=(none|all) " \
      "--cuda-options skinny_gemm=0"
      mv "$out/train_passes_noskinny.json" "$res/" 2> /dev/null ;;
    # The stream-K form of the GEMM updates off (on by default): the tiled kernel, one tile a
    # block (its JSON into the tarball).
    nostreamk) train_sweep gemm_update_streamk=0 train_passes_nostreamk "^pass_replay .*passes=(none|optimizer|all) " \
      "--cuda-options gemm_update_streamk=0"
      mv "$out/train_passes_nostreamk.json" "$res/" 2> /dev/null ;;
    # The GEMM updates on the side stream (on the main stream by default), its JSON into the tarball.
    gemmside) train_sweep lanes_side_gemm_updates=1 train_passes_gemmside "^pass_replay .*passes=(none|lanes|all) " \
      "--pass-options lanes_side_gemm_updates=1"
      mv "$out/train_passes_gemmside.json" "$res/" 2> /dev/null ;;
    *) say "fusion-run: unknown sweep $sw" ;;
  esac
done
# The probes of the open questions (dev/cuda, built with
# TG_CMAKE_ARGS=-DTWOGRAPH_PROBES=ON): attention on head views, the update beside the GEMMs,
# momentum in the weight-gradient GEMM, what any kernel reaches on the 64 MiB column sum,
# the column-reduction loops the library replaced against its own, a GEMM of our own with the
# SGD update in its epilogue, the runtime's matmul_sgd_momentum, and an own input-gradient GEMM
# (both operands transposed into shared memory) with relu_grad in its epilogue, and the
# skinny-GEMM kernels on the w4096 MLP's thin products.
for name in attention-heads update-overlap momentum-gemm colreduce-floor colreduce-variants sgemm-update \
  gemm-update-runtime sgemm-dgrad skinny-gemm; do
  probe="$build/dev/cuda/tg-probe-$name"
  [ -x "$probe" ] || continue
  timeout 120 "$probe" > "$res/$name.txt" 2>&1
  say "tg-probe-$name rc=$?"; tee -a "$summary" < "$res/$name.txt"
done
# Why the own GEMM issues fewer instructions a cycle than cuBLASLt's, if it does: Nsight
# Compute's warp stall reasons for cuBLASLt's kernel and two of the probe's.
probe="$build/dev/cuda/tg-probe-sgemm-update"
if [ -x "$probe" ] && command -v /usr/local/cuda/bin/ncu > /dev/null; then
  OUT="$res" timeout 300 bash "$(dirname "$0")/../../dev/cuda/sgemm-stalls.sh" "$probe" > "$res/sgemm-stalls.txt" 2>&1
  say "sgemm-stalls rc=$?"; tee -a "$summary" < "$res/sgemm-stalls.txt"
fi
t0=$SECONDS
timeout 120 "$build/experiments/launch/tg-launch" --device 0 --quick --ops 1000 --passes all \
  --json "$res/launch_passes.json" > "$res/launch.txt" 2> "$res/launch.err"
say "tg-launch rc=$? in $((SECONDS - t0)) s"; grep -E "^static_replay_gpu" "$res/launch.txt" | sed 's/  */ /g' | tee -a "$summary"
tar -C "$res" -czf "$out/fusion-run.tar.gz" .
