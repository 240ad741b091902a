#!/usr/bin/env bash
# Installs the Debian packages Kiln needs to build, test and run its bundled
# example (python3-* only make test models and reference outputs). Idempotent:
# packages already present are left alone.
set -euo pipefail

PACKAGES=(
  cmake ninja-build clang-22 lld-22 llvm-22-dev llvm-22-tools
  libmlir-22-dev mlir-22-tools
  libonnx-dev libonnx-testdata protobuf-compiler libprotobuf-dev
  libgtest-dev googletest libclang-rt-22-dev
  python3 python3-onnx python3-numpy python3-torch
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
