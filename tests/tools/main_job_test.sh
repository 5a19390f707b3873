#!/usr/bin/env bash
# Runs scripts/run-main-job on saved reports, as if the experiments had just written them: a
# build folder of stand-in binaries that copy a saved report to --json, and the real tg-report.
# Two sets: the CPU-only run saved in docs/results/main-job-cpu/ and the H200 reports of the
# chapters (docs/results/*.json). Checks what a reader gets: exit 0, stderr with nothing but the
# progress lines, a summary that opens with what was measured, the headline figures and what
# the machine can show, no link to a file that is not there, no path of the machine it ran on,
# and every figure at most 2000 px wide. Exit 77 (skipped) without a python3 with matplotlib.
#   main_job_test.sh SOURCE_DIR BUILD_DIR WORK_DIR
set -euo pipefail
src=$1 build=$2 work=$3
py=$(bash "$src/tests/python_with.sh" matplotlib "python3 module matplotlib is missing (apt-get install python3-matplotlib)") || exit 77
[ -x "$build/tools/tg-report/tg-report" ] || { echo "FAIL: $build/tools/tg-report/tg-report is not built"; exit 1; }
rm -rf "$work" && mkdir -p "$work"

run_set() {  # NAME SAMPLE_DIR EXPECTED_PHRASE
  local name=$1 sample=$2 phrase=$3 fake="$work/$1/build" out="$work/$1/report"
  mkdir -p "$fake/tools/tg-report"
  ln -s "$(cd "$build/tools/tg-report" && pwd)/tg-report" "$fake/tools/tg-report/tg-report"
  local n=0
  for f in "$sample"/*.json; do
    local exp
    exp=$(basename "$f" .json)
    case $exp in noop|launch|transfer|memory|matmul|shapes|train|pipeline|kernels) ;; *) continue ;; esac
    mkdir -p "$fake/experiments/$exp"
    cat >"$fake/experiments/$exp/tg-$exp" <<STUB
#!/usr/bin/env bash
while [ \$# -gt 0 ]; do
  case \$1 in --json) cp "$f" "\$2"; shift ;; --csv) : >"\$2"; shift ;; esac
  shift
done
echo "tg-$exp: the saved report $(basename "$f")"
STUB
    chmod +x "$fake/experiments/$exp/tg-$exp"
    n=$((n + 1))
  done
  ((n > 0)) || { echo "FAIL: $name: no saved report in $sample"; exit 1; }
  local rc=0
  bash "$src/scripts/run-main-job" "$fake" "$out" >"$work/$name.out" 2>"$work/$name.err" || rc=$?
  [ "$rc" -eq 0 ] || { echo "FAIL: $name: run-main-job exit $rc"; cat "$work/$name.out" "$work/$name.err"; exit 1; }
  if grep -v "^run-main-job: tg-[a-z]* --quick --device auto$" "$work/$name.err"; then
    echo "FAIL: $name: stderr has more than the progress lines (above)"; exit 1
  fi
  local s="$out/summary.md"
  for h in "## What this run measured" "## Headline figures" "## What this machine can and cannot show" \
           "## Plots" "## Full tables" "$phrase"; do
    grep -qF "$h" "$s" || { echo "FAIL: $name: summary.md lacks '$h'"; exit 1; }
  done
  if grep -nF -e "$work" -e "/tmp/" "$s"; then echo "FAIL: $name: summary.md names a path of this machine"; exit 1; fi
  # Every relative link of the summary points at a file that exists.
  local links link target
  links=$(grep -o '](\([^)]*\))' "$s" | sed 's/^](//; s/)$//' || true)
  for link in $links; do
    target=$link
    [ "${link:0:1}" = / ] || target="$out/$link"
    [ -e "$target" ] || { echo "FAIL: $name: summary.md links $link, which is not there"; exit 1; }
  done
  [ "$(grep -c '^\*\*' "$s")" -ge 5 ] || { echo "FAIL: $name: fewer than five headline figures"; exit 1; }
  "$py" "$src/tests/tools/figure_width_check.py" "$out/plots"
  echo "OK: $name: $n reports, $(ls "$out/plots" | grep -c png) figures"
}

run_set cpu "${TG_MAIN_JOB_TEST_CPU:-$src/docs/results/main-job-cpu}" "No GPU: the CPU backend"
run_set h200 "$src/docs/results" "This run had a GPU"
