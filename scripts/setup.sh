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
  python3-pip python3-setuptools python3-wheel python3-torchvision
)
# PyPI packages, exact versions, installed without dependencies into .pydeps/ (gitignored) for
# the tests that run the reference code itself: torchscale's own Sub-LN modules
# (tests/ref/test_torchscale.py), which import fairscale and timm (timm needs torchvision above).
PYPI=(torchscale==0.3.0 fairscale==0.4.0 timm==0.6.13)
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
pypi_install() {
  local stamp="$ROOT/.pydeps/.stx-pinned"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "${PYPI[*]}" ]; then
    echo "setup: PyPI packages present (${PYPI[*]})"
    return
  fi
  echo "setup: installing ${PYPI[*]} from PyPI into .pydeps/"
  rm -rf "$ROOT/.pydeps"
  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-deps --no-build-isolation \
    --target "$ROOT/.pydeps" "${PYPI[@]}"
  echo "${PYPI[*]}" > "$stamp"
}
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PKGS[@]} Debian packages present"
  pypi_install
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
pypi_install
