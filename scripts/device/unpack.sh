#!/usr/bin/env bash
# On the GPU machine: unpacks .carry/build.tar.xz in the repository root and makes
# the absolute paths ctest recorded here (/work/main/...) resolve there.
# Usage: source scripts/device/unpack.sh
repo=$(pwd)
tar -xJf .carry/build.tar.xz
mkdir -p /tmp/twograph-lib && mv lib/* /tmp/twograph-lib/ 2>/dev/null; rmdir lib 2>/dev/null
export LD_LIBRARY_PATH=/tmp/twograph-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [ "$repo" != /work/main ]; then mkdir -p /work && ln -sfn "$repo" /work/main; fi
