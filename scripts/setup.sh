#!/usr/bin/env bash
# Installs every Debian package stx needs (idempotent). Runs as root, or through sudo.
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build pkg-config ccache git
  libtorch-dev libopenblas-dev libgloo-dev
  libyaml-cpp-dev libcli11-dev nlohmann-json3-dev libfmt-dev
  libgtest-dev googletest
  gnuplot-nox clang-format-14
  sentencepiece libsentencepiece-dev zlib1g-dev
  python3 python3-torch python3-numpy python3-nltk python3-yaml
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PKGS[@]} Debian packages present"
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
echo "setup: installing ${missing[*]}"
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
