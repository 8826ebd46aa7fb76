#!/usr/bin/env bash
# Installs everything stx needs (idempotent): Debian 12's packages for the build tools and the C++
# libraries, then a virtual environment .venv/ in the checkout (gitignored) holding the exact
# Python packages of requirements.txt — PyTorch 2.11.0, whose LibTorch stx builds against, and
# the reference packages the tests check stx against. Runs as root, or through sudo for apt-get.
# Nothing else needs to be installed first — no CUDA toolkit: the build takes LibTorch from the
# wheel without PyTorch's CMake config (cmake/torch.cmake).
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build pkg-config ccache git
  libopenblas-dev libgloo-dev
  libyaml-cpp-dev libcli11-dev nlohmann-json3-dev
  libgtest-dev googletest
  gnuplot-nox clang-format-14
  sentencepiece libsentencepiece-dev zlib1g-dev
  python3 python3-venv
)
# Debian packages whose exact version is data: data/cache/python-stdlib (docs/data.md §5) is the
# text of their .py files, so it is built only from this version (scripts/data/build-python-corpus.sh
# checks the same PINNED). Installed by name when missing (python3 needs them anyway); a machine
# with another version keeps it — setup does not up- or downgrade the system's Python, and
# Debian's archive carries only the current point release — and goes without that one corpus.
PINNED=(libpython3.11-stdlib=3.11.2-6+deb12u6 libpython3.11-minimal=3.11.2-6+deb12u6)
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
# fairscale 0.4.0 is a source distribution: it is built with these, pinned, not with whatever
# pip's build isolation would fetch.
BUILD_TOOLS=(setuptools==80.9.0 wheel==0.45.1)

debian_install() {
  local missing=() p
  for p in "${PKGS[@]}" "${PINNED[@]%%=*}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "setup: all $((${#PKGS[@]} + ${#PINNED[@]})) Debian packages present"
    return
  fi
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    sudo=sudo
  fi
  echo "setup: installing ${missing[*]}"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
}

venv_install() {
  # The stamp is the requirements' checksum: a changed pin rebuilds the environment.
  local want stamp="$VENV/.stx-requirements"
  want="$(cat "$ROOT/requirements.txt" | sha256sum | cut -d' ' -f1) ${BUILD_TOOLS[*]}"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "setup: .venv matches requirements.txt"
    return
  fi
  echo "setup: creating .venv with requirements.txt (PyTorch 2.11.0 and its CUDA 13.0 libraries: about 3 GB)"
  rm -rf "$VENV"
  /usr/bin/python3 -m venv "$VENV"
  local pip=("$VENV/bin/python3" -m pip install -q --disable-pip-version-check --no-deps)
  "${pip[@]}" "${BUILD_TOOLS[@]}"
  "${pip[@]}" --no-build-isolation -r "$ROOT/requirements.txt"
  echo "$want" > "$stamp"
  "$VENV/bin/python3" -c "import torch; print('setup: .venv has torch', torch.__version__)"
}

python_corpus() {
  # The Python standard library corpus: about a second to build, "up to date" after. Exit 2 is
  # a version other than the pinned one (the script says which): everything but
  # configs/atlas-python.yaml works without it.
  local rc=0
  bash "$ROOT/scripts/data/build-python-corpus.sh" || rc=$?
  if [ "$rc" -eq 2 ]; then
    echo "setup: data/cache/python-stdlib not built (configs/atlas-python.yaml needs it; docs/data.md §5)"
  elif [ "$rc" -ne 0 ]; then
    exit "$rc"
  fi
}

debian_install
venv_install
python_corpus
