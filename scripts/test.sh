#!/usr/bin/env bash
# The README's test command: set-up (apt-get, configure, build) and every test.
# GPU tests report themselves as skipped when there is no device.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(scripts/bootstrap.sh "${1:-}" | tail -n 1)
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" --timeout 600
