#!/usr/bin/env bash
# Code comments say why the code is as it is now; the history of how it got there (commit
# hashes, device sessions, "tried at") belongs in CHANGELOG.md and commit bodies
# (CONTRIBUTING.md). Fails, listing them, when a comment line of the library's or the
# tools' sources cites a commit hash or a session. dev/ (the probes) is left out: its
# comments name the saved outputs they produced, whose file names carry the commit.
# Usage: comment_history_check.sh REPO_ROOT
set -u
root=${1:?usage: comment_history_check.sh REPO_ROOT}
cd "$root" || exit 2
# A hash: 7 to 12 hex digits with at least one digit and one letter, a word of its own (not
# part of a float such as 3.4028235e+38).
hash='(?<![0-9A-Za-z_.])(?=[0-9a-f]{7,12}(?![0-9A-Za-z_+]))(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,12}'
hits=$(grep -rnIP --include='*.cpp' --include='*.h' --include='*.cu' --include='*.cuh' \
  "//.*(${hash}|\\bsessions?\\b|\\btried at\\b)" trace graph kernels static dynamic experiments tools)
if [ -n "$hits" ]; then
  echo "code comments that cite history (a commit hash, a session, \"tried at\"); say why the code is"
  echo "as it is instead, and put the history in CHANGELOG.md:"
  echo "$hits"
  exit 1
fi
echo "comment_history_check: no commit hashes or sessions in code comments"
