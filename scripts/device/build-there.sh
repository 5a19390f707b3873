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
# The copy's .git may be stale: the revision comes from .carry/source-rev, written here
# before each call by `git describe --always --dirty > .carry/source-rev`.
rev=$(cat .carry/source-rev 2>/dev/null || echo unknown-copy)
# The cuDNN frontend's headers come in deps.tar.xz (pack-deps.sh); cuDNN itself is PyTorch's
# nvidia-cudnn package there, which cmake/Cudnn.cmake finds.
fe_root=/opt/twograph/cudnn_frontend
cmake --preset default -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DTWOGRAPH_SOURCE_REV="$rev" \
  -DTWOGRAPH_CUDNN_FRONTEND_ROOT=$fe_root ${TG_CMAKE_ARGS:-} > /tmp/configure.log 2>&1 || { cat /tmp/configure.log; exit 1; }
grep -E "cuDNN" /tmp/configure.log || true
# -k 0: build every target that can be built, so one broken target does not hide the rest.
# TG_BUILD_TARGETS (space-separated): only those targets, when a call has no time for all.
if cmake --build --preset default -j "$(nproc)" ${TG_BUILD_TARGETS:+--target $TG_BUILD_TARGETS} -- -k 0 > /tmp/build.log 2>&1; then
  echo "build-there: built build/default"
else
  echo "build-there: some targets failed:"; grep -E "error|FAILED" /tmp/build.log | head -40
  [ -n "${OUT:-}" ] && cp /tmp/build.log "$OUT/build.log"
  exit 1
fi
