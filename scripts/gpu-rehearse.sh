#!/usr/bin/env bash
# Rehearses scripts/gpu-check.sh on this CPU machine in a clean root that has only what the GPU
# machine has: a minimal Debian 12 with a compiler, CMake, ninja and python3 (debootstrap), the
# CUDA toolkit (bind-mounted from /usr/local/cuda) and PyTorch 2.11 (this checkout's .venv,
# bind-mounted read-only at /opt/torch/.venv as on the GPU machine) — no -dev packages: every C++
# dependency must come from gpu-deps/ (scripts/gpu-prepare.sh). A missing dependency fails here,
# not there. The check runs with --rehearse: up to the first step that needs a GPU.
#   Usage (root): scripts/gpu-rehearse.sh [ROOT] [OUT]   (defaults /var/tmp/stx-cleanroot, gpu-rehearsal)
# STX_GPU_TESTS (a ctest -R regex) limits the test step, which on 2 cores takes long.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$(pwd)
ROOT=${1:-/var/tmp/stx-cleanroot}
OUT=${2:-gpu-rehearsal}
[ "$(id -u)" -eq 0 ] || { echo "gpu-rehearse: needs root (debootstrap, chroot, bind mounts)" >&2; exit 2; }
[ -x .venv/bin/python3 ] || { echo "gpu-rehearse: no .venv: run scripts/setup.sh first" >&2; exit 2; }
[ -d gpu-deps/root ] || { echo "gpu-rehearse: no gpu-deps/: run scripts/gpu-prepare.sh first" >&2; exit 2; }
[ -x /usr/local/cuda/bin/nvcc ] || { echo "gpu-rehearse: no CUDA toolkit at /usr/local/cuda" >&2; exit 2; }

if [ ! -x "$ROOT/usr/bin/cmake" ]; then
  command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap
  echo "gpu-rehearse: creating the clean root $ROOT (Debian 12 minbase + g++, cmake, ninja, python3)"
  debootstrap --variant=minbase --include=g++,cmake,ninja-build,python3 bookworm "$ROOT" \
    http://deb.debian.org/debian >/dev/null
fi
# What the root must not have: the -dev packages that setup.sh installs on this machine.
for h in yaml-cpp/yaml.h CLI/CLI.hpp nlohmann/json.hpp gtest/gtest.h sentencepiece_processor.h zlib.h gloo/config.h; do
  [ ! -e "$ROOT/usr/include/$h" ] || { echo "gpu-rehearse: $ROOT is not clean: it has /usr/include/$h" >&2; exit 1; }
done

# The checkout (tracked and untracked-not-ignored files, what is copied to the GPU machine) and gpu-deps/.
rm -rf "$ROOT/stx" && mkdir -p "$ROOT/stx"
git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$ROOT/stx"
cp -a gpu-deps "$ROOT/stx/"
mounts=()
bind() {
  mkdir -p "$ROOT$2"
  mount --bind "$1" "$ROOT$2" && mount -o remount,bind,ro "$ROOT$2" 2>/dev/null || true
  mounts=("$ROOT$2" "${mounts[@]}")
}
cleanup() { for m in "${mounts[@]}"; do umount "$m" 2>/dev/null || umount -l "$m"; done; }
trap cleanup EXIT
bind "$SRC/.venv" /opt/torch/.venv
bind /usr/local/cuda /usr/local/cuda
bind /proc /proc
bind /dev /dev

echo "gpu-rehearse: running scripts/gpu-check.sh --rehearse in $ROOT"
rc=0
chroot "$ROOT" /usr/bin/env -i HOME=/root PATH=/usr/local/cuda/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  ${STX_GPU_TESTS:+STX_GPU_TESTS="$STX_GPU_TESTS"} \
  bash -c "cd /stx && scripts/gpu-check.sh --rehearse /stx/out /opt/torch/.venv/bin/python3" || rc=$?
rm -rf "$OUT" && cp -a "$ROOT/stx/out" "$OUT"
echo "gpu-rehearse: exit $rc; log in $OUT/gpu-check.log"
exit $rc
