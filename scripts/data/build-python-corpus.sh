#!/usr/bin/env bash
# build-python-corpus.sh: builds data/cache/python-stdlib, the Python 3.11 standard library as a
# byte-level LM corpus (program source: the atlas's second corpus, configs/atlas-python.yaml),
# from the .py files that Debian's libpython3.11-stdlib and libpython3.11-minimal install.
#
# usage: scripts/data/build-python-corpus.sh [--out DIR] [--force]
#
#   --out DIR   output directory (default: data/cache/python-stdlib in the repository)
#   --force     rebuild even when DIR is up to date
#
# The corpus is the text of the installed files, so both packages must be at the pinned version
# (PINNED below; scripts/setup.sh names the same); otherwise this prints the pinned and the
# installed version and exits 2, writing nothing. DIR is up to date when DIR/.stamp names this
# version and the builder's checksum and `sha256sum -c SHA256SUMS` passes: then it prints
# "up to date" and exits 0 (well under a second). A build takes about a second and is
# deterministic: two builds give byte-identical files. Writes, via a temporary directory
# renamed into place:
#   DIR/{train,valid,test}.txt.gz   one segment per line (a line break inside one is \v)
#   DIR/files.tsv                   every used source file and its split
#   DIR/README.md, DIR/SHA256SUMS   version, rules, counts, bytes, checksums
# See docs/data.md §5.
set -euo pipefail

PINNED=3.11.2-6+deb12u6
PACKAGES=(libpython3.11-stdlib libpython3.11-minimal)

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
OUT="$REPO/data/cache/python-stdlib"
FORCE=0
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --out) [ $# -ge 2 ] || { usage >&2; exit 2; }; OUT=$2; shift 2 ;;
    --out=*) OUT=${1#*=}; shift ;;
    --force) FORCE=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "build-python-corpus: unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
done

for p in "${PACKAGES[@]}"; do
  have=$(dpkg-query -W -f='${Version}' "$p" 2>/dev/null || true)
  if [ "$have" != "$PINNED" ]; then
    echo "build-python-corpus: $p is pinned to $PINNED, installed: ${have:-none}" >&2
    exit 2
  fi
done

KEY="libpython3.11=$PINNED builder=$(cat "$HERE/python_stdlib.py" "$HERE/stxdata.py" "${BASH_SOURCE[0]}" |
  sha256sum | cut -c1-16)"
if [ "$FORCE" = 0 ] && [ -f "$OUT/.stamp" ] && [ "$(cat "$OUT/.stamp")" = "$KEY" ] &&
  (cd "$OUT" && sha256sum --quiet -c SHA256SUMS >/dev/null 2>&1); then
  echo "[python-stdlib] up to date: $OUT ($PINNED)"
  exit 0
fi
mkdir -p "$(dirname "$OUT")"
exec "$PY" "$HERE/python_stdlib.py" --out "$OUT" --pinned "$PINNED" --stamp "$KEY"
