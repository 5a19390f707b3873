#!/usr/bin/env bash
# Installs what is missing (Debian 12 packages), configures and builds twograph.
# Usage: scripts/bootstrap.sh [preset]   (default: "default" when nvcc is found, else "cpu-only")
# Prints the build directory on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."

# libonnx-dev with libprotobuf-dev (which CMake needs to use onnx_proto; libonnx-dev does not
# pull it in): `tg-graph import` reads ONNX models through onnx_proto (without them the
# build still succeeds and import says it is missing).
# python3-pip: scripts/fetch-cudnn-frontend.sh downloads the cuDNN frontend's headers with it.
packages=(cmake ninja-build g++ libfmt-dev doctest-dev nlohmann-json3-dev libcli11-dev libopenblas-dev
          libonnx-dev libprotobuf-dev protobuf-compiler python3 python3-pip python3-matplotlib python3-jsonschema)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "bootstrap: installing ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >&2
fi

if [ -z "${CUDACXX:-}" ] && ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
# The cuDNN frontend's headers (attention through cuDNN); without them the build still
# succeeds, running attention on the project's own kernels, and the script says why.
bash scripts/fetch-cudnn-frontend.sh || echo "bootstrap: no cuDNN frontend (see above)" >&2
preset=${1:-}
if [ -z "$preset" ]; then
  if command -v nvcc >/dev/null 2>&1; then preset=default; else preset=cpu-only; fi
fi
jobs=${TWOGRAPH_JOBS:-$(nproc)}
echo "bootstrap: configuring preset '$preset'" >&2
cmake --preset "$preset" >&2
cmake --build --preset "$preset" -j "$jobs" >&2
echo "build/$preset"
