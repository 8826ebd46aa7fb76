#!/usr/bin/env bash
# Regenerates the figures and numbers of docs/sigma-reparam.md: the entropy-collapse experiment
# (resumable: a rerun continues), its figures copied to docs/sigma-reparam/, and σReparam's
# per-step cost (bench/sigma_cost.sh). Needs the fetched LM corpus (scripts/fetch-data.sh).
#   scripts/sigma-reparam.sh [BUILD_DIR]           about an hour on 2 cores (33 runs × 200 updates)
#   scripts/sigma-reparam.sh [BUILD_DIR] --quick   3 learning rates × 60 updates, ~10 minutes; no docs copy
# One thread per run (STX_THREADS=1, the fastest for d_model 128 here) unless STX_THREADS is set.
set -euo pipefail
cd "$(dirname "$0")/.."
B=build
QUICK=()
for a in "$@"; do
  case $a in
    --quick) QUICK=(--quick) ;;
    -*) echo "sigma-reparam.sh: unknown option $a (allowed: --quick)" >&2; exit 2 ;;
    *) B=$a ;;
  esac
done
[ -x "$B/stx" ] || { echo "sigma-reparam.sh: no stx binary at $B/stx (build first, or pass BUILD_DIR)" >&2; exit 2; }
export STX_THREADS=${STX_THREADS:-1}
out=runs/entropy-collapse${QUICK:+-quick}
mult=(--multipliers 1,4,16,64,256,1024)
[ ${#QUICK[@]} -eq 0 ] || mult=()
"$B/stx" experiment entropy-collapse --config configs/entropy-collapse.yaml --out "$out" "${QUICK[@]}" "${mult[@]}"
if [ ${#QUICK[@]} -eq 0 ]; then
  mkdir -p docs/sigma-reparam
  for f in lr_robustness arm_post arm_pre arm_post-sgd arm_sigma-post arm_sigma-nonorm arm_sigma-post-sgd \
           run_post-x64 run_pre-x64 run_sigma-post-x64 run_sigma-nonorm-x16 run_post-x256 run_sigma-post-x256; do
    cp "$out/figures/$f.png" docs/sigma-reparam/
  done
  bench/sigma_cost.sh "$B"
fi
echo "report: $out/report.md"
