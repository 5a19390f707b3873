#!/usr/bin/env bash
# The GPU machine (Ubuntu, CUDA toolkit, cmake, ninja, g++) has none of the Debian
# packages twograph builds with. This packs, from this machine, the header-only
# libraries with their CMake package files and OpenBLAS into .carry/deps.tar.xz,
# with absolute paths; scripts/device/build-there.sh unpacks them there without
# overwriting anything the machine has.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .carry
paths=(
  /usr/include/fmt /usr/lib/x86_64-linux-gnu/cmake/fmt
  /usr/include/doctest /usr/lib/cmake/doctest
  /usr/include/nlohmann /usr/share/cmake/nlohmann_json /usr/share/pkgconfig/nlohmann_json.pc
  /usr/include/CLI /usr/share/cmake/CLI11
  /usr/include/x86_64-linux-gnu/openblas-pthread /usr/lib/x86_64-linux-gnu/openblas-pthread
  /usr/lib/x86_64-linux-gnu/libopenblas.so /usr/lib/x86_64-linux-gnu/libopenblas.so.0
)
for f in /usr/lib/x86_64-linux-gnu/libfmt.so* /usr/lib/x86_64-linux-gnu/libgfortran.so.5* /usr/lib/x86_64-linux-gnu/libquadmath.so.0*; do
  paths+=("$f")
done
existing=()
for p in "${paths[@]}"; do [ -e "$p" ] && existing+=("$p"); done
# The cuDNN frontend's headers (scripts/fetch-cudnn-frontend.sh), stored under
# /opt/twograph/cudnn_frontend, where build-there.sh points cmake.
bash scripts/fetch-cudnn-frontend.sh
fe=()
if [ -f third_party/cudnn_frontend/include/cudnn_frontend.h ]; then
  fe=(--transform 's|^third_party/cudnn_frontend|opt/twograph/cudnn_frontend|' third_party/cudnn_frontend/include)
else
  echo "pack-deps: warning: no cuDNN frontend headers: the GPU build runs attention on the project's own kernels" >&2
fi
{ tar -cf - --exclude='*.a' "${existing[@]}" 2>/dev/null; } > .carry/deps.tar
[ ${#fe[@]} -eq 0 ] || tar -rf .carry/deps.tar "${fe[@]}"
xz -T2 -3 -c .carry/deps.tar > .carry/deps.tar.xz && rm .carry/deps.tar
ls -la .carry/deps.tar.xz >&2
