#!/usr/bin/env bash
# Prints a python3 that can `import MODULES` (as the import statement takes them: "torch,
# numpy"). Without one it prints "SKIPPED: WHY" on stderr and exits 77 (ctest: skipped).
#   py=$(bash tests/python_with.sh "matplotlib" "python3 module matplotlib is missing (...)") || exit 77
modules=$1 why=$2
for c in python3 /usr/bin/python3; do
  if command -v "$c" >/dev/null 2>&1 && "$c" -c "import $modules" 2>/dev/null; then
    echo "$c"
    exit 0
  fi
done
echo "SKIPPED: $why" >&2
exit 77
