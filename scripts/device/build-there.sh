#!/usr/bin/env bash
# On the GPU machine: unpack .carry/deps.tar.xz (keeping the machine's own files),
# then configure and build the default preset with all cores.
set -euo pipefail
tar -C / --skip-old-files -xJf .carry/deps.tar.xz 2>/dev/null || true
# Debian's alternatives symlinks point into openblas-pthread; make sure they resolve.
ln -sfn /usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0 /usr/lib/x86_64-linux-gnu/libopenblas.so.0 2>/dev/null || true
ln -sfn /usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so /usr/lib/x86_64-linux-gnu/libopenblas.so 2>/dev/null || true
ldconfig 2>/dev/null || true
export PATH=/usr/local/cuda/bin:$PATH
cmake --preset default -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc > /tmp/configure.log 2>&1 || { cat /tmp/configure.log; exit 1; }
cmake --build --preset default -j "$(nproc)" > /tmp/build.log 2>&1 || { grep -E "error|Error" /tmp/build.log | head -40; tail -20 /tmp/build.log; exit 1; }
echo "build-there: built build/default"
