#!/usr/bin/env bash
# Fetches the cuDNN frontend's headers (header-only; the attention ops' cuDNN path,
# kernels/cuda/attention_cudnn.h) into third_party/cudnn_frontend/include, where
# cmake/CudnnFrontend.cmake looks. They come from PyPI's nvidia-cudnn-frontend wheel,
# downloaded (never installed) and unzipped, so the system's Python stays as it is.
# Usage: scripts/fetch-cudnn-frontend.sh [WHEEL]   (a wheel already downloaded, else pip downloads one)
# Exits 0 without headers when the download fails: the build then runs attention on the
# project's own kernels, and this says why.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=third_party/cudnn_frontend
if [ -f "$dest/include/cudnn_frontend.h" ]; then
  echo "fetch-cudnn-frontend: $dest/include already there" >&2
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
wheel=${1:-}
if [ -z "$wheel" ]; then
  if ! python3 -m pip --version >/dev/null 2>&1; then
    echo "fetch-cudnn-frontend: python3 has no pip (apt-get install python3-pip): no cuDNN frontend, attention runs on the project's own kernels" >&2
    exit 0
  fi
  if ! python3 -m pip download -q --no-deps --only-binary=:all: nvidia-cudnn-frontend -d "$tmp" >&2; then
    echo "fetch-cudnn-frontend: pip download nvidia-cudnn-frontend failed (no network?): no cuDNN frontend, attention runs on the project's own kernels" >&2
    exit 0
  fi
  wheel=$(ls "$tmp"/nvidia_cudnn_frontend-*.whl 2>/dev/null | head -1)
fi
if [ -z "$wheel" ] || [ ! -f "$wheel" ]; then
  echo "fetch-cudnn-frontend: no nvidia_cudnn_frontend wheel to unpack: no cuDNN frontend" >&2
  exit 0
fi
python3 - "$wheel" "$tmp/unzipped" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    z.extractall(sys.argv[2], [n for n in z.namelist() if n.startswith("include/")])
PY
mkdir -p "$dest"
rm -rf "$dest/include"
mv "$tmp/unzipped/include" "$dest/include"
echo "fetch-cudnn-frontend: $(basename "$wheel") -> $dest/include" >&2
