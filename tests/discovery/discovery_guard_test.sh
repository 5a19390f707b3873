#!/usr/bin/env bash
# Proves the guard in tests/test_main.cpp: a ctest entry that runs no test case
# fails, and a test case name that discovery would split is refused.
# Usage: discovery_guard_test.sh SAFE UNSAFE UNCHECKED DISCOVERY_SCRIPT CTEST CMAKE WORKDIR
set -uo pipefail
safe=$1 unsafe=$2 unchecked=$3 discover=$4 ctest=$5 cmake=$6 work=$7
failures=0 checks=0
pass() { checks=$((checks + 1)); echo "ok: $1"; }
fail() { checks=$((checks + 1)); failures=$((failures + 1)); echo "FAILED: $1"; }

# expect CODE TEXT DESCRIPTION -- COMMAND...: the exit status is CODE and the output holds TEXT.
expect() {
  local code=$1 text=$2 what=$3; shift 4
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" -ne "$code" ]; then
    fail "$what: exit $rc, expected $code; output: $out"
  elif ! grep -qF -- "$text" <<<"$out"; then
    fail "$what: output lacks '$text'; output: $out"
  else
    pass "$what"
  fi
}

expect 0 "1 passed" "a name with a comma runs through the escaped filter discovery writes" -- \
  "$safe" '--test-case=discovery probe: a plain name\, with a comma'
expect 3 "no test case matched" "a filter that matches nothing fails the run" -- \
  "$safe" '--test-case=discovery probe: a'
expect 3 "TG_TEST_GUARD: test case name" "listing refuses a name with ';'" -- \
  "$unsafe" --list-test-cases
expect 3 "TG_TEST_GUARD: test case name" "a run that sees such a name fails, even filtered to another case" -- \
  "$unsafe" '--test-case=discovery probe: a plain name\, with a comma'

# doctest's own discovery script, as the build runs it: the unsafe name makes
# the listing fail, so the build stops instead of registering split entries.
rm -rf "$work" && mkdir -p "$work/refused" "$work/split"
expect 1 "TG_TEST_GUARD" "discovery of the unsafe probe stops with the guard's message" -- \
  "$cmake" -D "TEST_EXECUTABLE=$unsafe" -D "TEST_WORKING_DIR=$work" -D TEST_PREFIX=probe: \
  -D "CTEST_FILE=$work/refused/tests.cmake" -D TEST_LIST=probe_tests -P "$discover"

# With the name check compiled out, discovery registers what CMake makes of the
# name; every such entry must fail in ctest rather than pass with nothing run.
"$cmake" -D "TEST_EXECUTABLE=$unchecked" -D "TEST_WORKING_DIR=$work" -D TEST_PREFIX=probe: \
  -D "CTEST_FILE=$work/split/tests.cmake" -D TEST_LIST=probe_tests -P "$discover" >/dev/null 2>&1 \
  || fail "discovery of the unchecked probe failed"
echo 'include(tests.cmake)' >"$work/split/CTestTestfile.cmake"
out=$("$ctest" --test-dir "$work/split" 2>&1); rc=$?
entries=$(grep -c '^add_test' "$work/split/tests.cmake")
passed=$(grep -cE 'Test +#[0-9]+: .* Passed' <<<"$out")
echo "$out"
# The comma name passes; the name split at ';' gives at least two entries, none of which may pass.
if [ "$entries" -lt 3 ]; then
  fail "expected the unsafe name to split into two or more entries beside the safe one, got $entries entries"
elif [ "$rc" -eq 0 ] || [ "$passed" -ne 1 ]; then
  fail "ctest over $entries discovered entries: exit $rc with $passed passed; only the safe case may pass"
else
  pass "ctest over $entries discovered entries: the safe case passes, each split entry fails"
fi

echo "$((checks - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]
