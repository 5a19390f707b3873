#!/usr/bin/env bash
# The README's main-job command: set-up (apt-get, configure, build), then every
# experiment in quick mode on the default device, writing report/.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(scripts/bootstrap.sh "${1:-}" | tail -n 1)
exec scripts/run-main-job "$build" report
