#!/usr/bin/env bash
# Prints a python3 that can `import jsonschema`, for the report schema tests. Without
# one it says why on stderr and exits 77 (ctest: skipped); the C++ validator still runs.
#   py=$(bash tests/jsonschema_python.sh) || exit 77
for c in /usr/bin/python3 python3; do
  if command -v "$c" >/dev/null 2>&1 && "$c" -c "import jsonschema" 2>/dev/null; then
    echo "$c"
    exit 0
  fi
done
echo "SKIPPED: python3 module jsonschema is missing (apt-get install python3-jsonschema); the C++ validator still ran" >&2
exit 77
