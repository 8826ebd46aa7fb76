#!/usr/bin/env bash
# Packs this machine's build of stx (built against the CUDA LibTorch wheel in .venv) with the
# libraries it needs that a machine with PyTorch but no Debian -dev packages lacks (OpenBLAS and
# its Fortran runtime, yaml-cpp, SentencePiece), so that scripts/gpu-check.sh can run it there
# without building (STX_BUNDLE=DIR): GPU time is for measuring, and a 16-core build takes minutes.
# LibTorch and CUDA's libraries are not packed: the target's PyTorch 2.11 (CUDA) wheel has them.
#   Usage: scripts/gpu-bundle.sh [BUILD_DIR] [DIR]     (defaults build, gpu-bundle; DIR is ignored by git)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
DIR=${2:-gpu-bundle}
[ -x "$BUILD/stx" ] || { echo "gpu-bundle: no $BUILD/stx (make build first)" >&2; exit 2; }
version=$("$BUILD/stx" --version) || { echo "gpu-bundle: $BUILD/stx --version failed" >&2; exit 2; }
case "$version" in *"CUDA: yes"*) ;; *) echo "gpu-bundle: $BUILD/stx is not a CUDA build" >&2; exit 2 ;; esac
rm -rf "$DIR" && mkdir -p "$DIR/lib"
cp "$BUILD/stx" "$BUILD/libstx_spm.so" "$DIR/"
# Every shared library stx or its SentencePiece plug-in loads, minus glibc/libstdc++ and the
# ones the wheel brings (torch, c10, CUDA, NVIDIA).
for f in "$BUILD/stx" "$BUILD/libstx_spm.so"; do ldd "$f"; done | awk '$3 ~ /^\// {print $3}' | sort -u |
  { grep -Ev '/(libc|libm|libdl|libpthread|librt|libutil|libgcc_s|libstdc\+\+|ld-linux[^/]*)\.so' || true; } |
  { grep -Ev 'torch/lib|/nvidia/|libcuda|libz\.so' || true; } | while read -r lib; do cp -L "$lib" "$DIR/lib/"; done
tar -C "$DIR" -cJf "$DIR/lib.tar.xz" lib && rm -rf "$DIR/lib"
echo "gpu-bundle: $DIR: $(ls "$DIR" | paste -sd' ') — $(du -sm "$DIR" | cut -f1) MB"
