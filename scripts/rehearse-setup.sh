#!/usr/bin/env bash
# Rehearses the README's two set-up commands on a Debian 12 that has nothing pre-installed: a
# clean root made by debootstrap (minbase, plus git and make: what a user needs to clone the
# repository and type the command), with no CUDA toolkit, no -dev packages and no PyTorch. Inside
# it, `make demo` runs from nothing (Debian packages, .venv from PyPI, the build, the demo), then
# `make test` (the same build, every test). Each command's wall time and exit status go to
# OUT/times.txt, their output to OUT/demo.log and OUT/test.log. Not part of CI: it downloads
# about 3 GB and takes about an hour on 2 cores.
#   Usage (root): scripts/rehearse-setup.sh [ROOT] [OUT]   (defaults /var/tmp/stx-setup-root, setup-rehearsal)
# ROOT is replaced on every run.
# The checkout is copied as git would clone it (tracked files only, at HEAD's working tree).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=${1:-/var/tmp/stx-setup-root}
OUT=$(realpath -m "${2:-setup-rehearsal}")
[ "$(id -u)" -eq 0 ] || { echo "rehearse-setup: needs root (debootstrap, chroot, bind mounts)" >&2; exit 2; }

# The root starts as a copy of a debootstrapped base (kept beside it, ROOT.base), so each
# rehearsal begins from nothing installed.
BASE="$ROOT.base"
if [ ! -x "$BASE/usr/bin/make" ]; then
  command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap
  echo "rehearse-setup: creating the base root $BASE (Debian 12 minbase + git, make)"
  rm -rf "$BASE"
  debootstrap --variant=minbase --include=git,make,ca-certificates bookworm "$BASE" http://deb.debian.org/debian \
    >/dev/null
fi
rm -rf "$ROOT" && cp -a "$BASE" "$ROOT"
# What the root must not have before the rehearsal: a CUDA toolkit, the C++ libraries' headers.
[ ! -e "$ROOT/usr/local/cuda" ] || { echo "rehearse-setup: $ROOT has /usr/local/cuda" >&2; exit 1; }
for h in yaml-cpp/yaml.h CLI/CLI.hpp nlohmann/json.hpp gtest/gtest.h zlib.h; do
  [ ! -e "$ROOT/usr/include/$h" ] || { echo "rehearse-setup: $ROOT is not clean: it has /usr/include/$h" >&2; exit 1; }
done

rm -rf "$ROOT/stx" && git clone -q "$(pwd)" "$ROOT/stx"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
# What Debian's installer writes and debootstrap does not: the loopback names and this host's
# name (torchrun's rendezvous resolves it).
printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n' "$(hostname)" >"$ROOT/etc/hosts"
# The host's certificate authorities go along: a network that inspects TLS on its way to PyPI
# signs with its own, which the host trusts and a fresh root does not. Nothing else of the host.
cp /etc/ssl/certs/ca-certificates.crt "$ROOT/etc/host-ca-certificates.crt"
mounts=()
bind() {
  mkdir -p "$ROOT$2"
  mount --bind "$1" "$ROOT$2"
  mounts=("$ROOT$2" "${mounts[@]}")
}
cleanup() { for m in "${mounts[@]}"; do umount "$m" 2>/dev/null || umount -l "$m"; done; }
trap cleanup EXIT
bind /proc /proc
bind /dev /dev
bind /dev/pts /dev/pts
bind /sys /sys

mkdir -p "$OUT" && : >"$OUT/times.txt"
run() {  # run NAME COMMAND: in the root, timed
  local t0 rc=0
  t0=$(date +%s)
  echo "rehearse-setup: $2 (log $OUT/$1.log)"
  chroot "$ROOT" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
    PIP_CERT=/etc/host-ca-certificates.crt SSL_CERT_FILE=/etc/host-ca-certificates.crt \
    bash -c "cd /stx && $2" >"$OUT/$1.log" 2>&1 || rc=$?
  echo "$2: exit $rc, $(($(date +%s) - t0)) s" | tee -a "$OUT/times.txt"
  return $rc
}
run demo "make demo"
run test "make test"
echo "rehearse-setup: both passed; times in $OUT/times.txt"
