#!/usr/bin/env bash
# Prints a python3 that can `import jsonschema`, for the report schema tests. Without
# one it says why on stderr and exits 77 (ctest: skipped); the C++ validator still runs.
#   py=$(bash tests/jsonschema_python.sh) || exit 77
exec bash "$(dirname "$0")/python_with.sh" jsonschema \
  "python3 module jsonschema is missing (apt-get install python3-jsonschema); the C++ validator still ran"
