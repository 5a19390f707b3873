#!/usr/bin/env bash
# On the GPU machine: unpacks .carry/build.tar.xz in the repository root and makes
# the absolute paths ctest recorded where the build was made resolve here: the build's
# CMakeCache.txt names that source folder, which becomes a link to this checkout.
# Usage: source scripts/device/unpack.sh
repo=$(pwd)
unpacked=$(tar -xJvf .carry/build.tar.xz)
mkdir -p /tmp/twograph-lib && mv lib/* /tmp/twograph-lib/ 2>/dev/null; rmdir lib 2>/dev/null
export LD_LIBRARY_PATH=/tmp/twograph-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# The top-level cache (fewest folders deep); fetched dependencies carry caches of their own.
cache=$(printf '%s\n' "$unpacked" | awk -F/ '$NF == "CMakeCache.txt" && (!best || NF < depth) {best = $0; depth = NF}
                                              END {print best}')
built_in=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$cache" 2>/dev/null)
if [ -z "$built_in" ]; then
  echo "unpack: error: no CMakeCache.txt with CMAKE_HOME_DIRECTORY in .carry/build.tar.xz; pack a configured build with scripts/device/pack.sh" >&2
elif [ -e "$built_in" ] && [ ! -L "$built_in" ]; then
  [ "$built_in" -ef "$repo" ] || echo "unpack: warning: $built_in exists and is not this checkout: ctest's paths lead there" >&2
elif [ "$built_in" != "$repo" ]; then
  mkdir -p "$(dirname "$built_in")" && ln -sfn "$repo" "$built_in"
fi
