#!/usr/bin/env bash
# Gathers, on a machine with Debian 12's package archive, everything scripts/gpu-check.sh needs on
# a GPU machine that has PyTorch, a compiler, CMake, ninja and the CUDA toolkit but no package
# registry and no -dev packages: the Debian packages of stx's C++ dependencies, downloaded as .debs
# and unpacked into one prefix, gpu-deps/root/ (ignored by git; about 15 MB, kept under 60 MB, LIMIT_MB,
# so that it can be copied to a GPU machine without network access together with the checkout).
# PyTorch itself is not gathered: the GPU machine has its own 2.11.
#   Usage: scripts/gpu-prepare.sh [DIR]        (default gpu-deps)
# gpu-check.sh finds the prefix with STX_DEPS=DIR (its default is gpu-deps when that exists).
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-gpu-deps}
# Headers, CMake configs and libraries of: yaml-cpp, CLI11, nlohmann-json, GoogleTest,
# SentencePiece, zlib, and Gloo's headers (c10d's ProcessGroupGloo.hpp includes them; the code is
# inside libtorch_cpu.so, docs/design.md#the-engine-libtorch-from-pytorchs-wheel).
PKGS=(libyaml-cpp-dev libyaml-cpp0.7 libcli11-dev nlohmann-json3-dev libgtest-dev
      libsentencepiece-dev libsentencepiece0 zlib1g-dev zlib1g libgloo-dev)
LIMIT_MB=60

rm -rf "$DIR" && mkdir -p "$DIR/debs" "$DIR/root"
echo "gpu-prepare: downloading ${#PKGS[@]} Debian packages"
(cd "$DIR/debs" && apt-get download -q -o APT::Sandbox::User=root "${PKGS[@]}" >/dev/null) || {
  echo "gpu-prepare: apt-get download failed (is this Debian 12 with its archive reachable? apt-get update first)" >&2
  exit 1
}
for f in "$DIR"/debs/*.deb; do
  dpkg-deb -x "$f" "$DIR/root"
  dpkg-deb -f "$f" Package Version | paste -sd' ' >> "$DIR/VERSIONS"
done
# What a build does not read: documentation, and (for Gloo) the static library c10d does not use.
rm -rf "$DIR/root/usr/share/doc" "$DIR/root/usr/share/man" "$DIR/root/usr/share/lintian" "$DIR"/debs
find "$DIR/root" -name 'libgloo*' -delete
rm -rf "$DIR/root/usr/src" "$DIR/root/usr/share/cmake/Gloo"
# zlib1g unpacks into /lib (Debian 12 is not merged-/usr inside packages): one lib directory.
cp -a "$DIR"/root/lib/x86_64-linux-gnu/. "$DIR/root/usr/lib/x86_64-linux-gnu/" && rm -rf "$DIR/root/lib"
# Debian's absolute library symlinks (libz.so -> /lib/...) would point outside the prefix.
find "$DIR/root" -type l | while read -r l; do
  t=$(readlink "$l")
  case "$t" in /*) ln -sfn "$(basename "$t")" "$l" ;; esac
done
mb=$(du -sm "$DIR" | cut -f1)
echo "gpu-prepare: $DIR/root holds $(find "$DIR/root" -type f | wc -l) files, ${mb} MB"
if [ "$mb" -gt "$LIMIT_MB" ]; then
  echo "gpu-prepare: $DIR is ${mb} MB, over the ${LIMIT_MB} MB limit (the bundle is copied to a GPU machine without network access)" >&2
  exit 1
fi
