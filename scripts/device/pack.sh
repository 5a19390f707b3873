#!/usr/bin/env bash
# Packs a build tree for the GPU machine, which has the CUDA driver and cuBLAS but
# none of Debian's packages: the executables, ctest's files and the shared
# libraries they need from here (OpenBLAS and its Fortran runtime, CUPTI), xz-compressed
# into .carry/build.tar.xz (carry ".carry" with the device tool).
# Usage: scripts/device/pack.sh [build dir, default build/default]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/default}
mkdir -p .carry
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/lib"
for lib in libopenblas.so.0 libgfortran.so.5 libquadmath.so.0; do
  path=$(ldconfig -p | awk -v l="$lib" '$1==l {print $NF; exit}')
  [ -n "$path" ] && cp -L "$path" "$stage/lib/"
done
# CUPTI (the GPU spans of --trace): every tg-* binary loads it, from the CUDA toolkit.
for dir in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/extras/CUPTI/lib64; do
  cupti=$(ls "$dir"/libcupti.so.[0-9]* 2>/dev/null | head -1)
  if [ -n "$cupti" ]; then cp -L "$cupti" "$stage/lib/"; break; fi
done
# Everything in the build tree but object files and static libraries.
tar -C . --exclude='*.o' --exclude='*.a' --exclude='CMakeFiles/*.dir' --exclude='.ninja_*' \
    -cf "$stage/build.tar" "$build"
tar -C "$stage" -rf "$stage/build.tar" lib
xz -T2 -3 -c "$stage/build.tar" > .carry/build.tar.xz
ls -la .carry/build.tar.xz >&2
