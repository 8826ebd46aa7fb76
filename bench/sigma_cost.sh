#!/usr/bin/env bash
# bench/sigma_cost.sh — what σReparam (Zhai et al. 2023, every linear as γ·W/σ(W)) costs per
# training step: `stx bench` of the same model without and with model.sigma_reparam, alternated
# in one run so that both see the same machine load.
#   bench/sigma_cost.sh [BUILD_DIR] [--config FILE] [--rounds N] [--steps N] [--threads N]
# Prints each round, then the medians and `ratio: X` (σReparam / plain step time, CPU time too)
# and the peak-memory difference. Defaults: configs/entropy-collapse.yaml, 3 rounds of 10 steps
# after 2 warm-up steps, 1 thread (the steadiest on a shared machine).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build"
CONFIG="$ROOT/configs/entropy-collapse.yaml"
ROUNDS=3
STEPS=10
THREADS=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --config) CONFIG="$2"; shift ;;
    --rounds) ROUNDS="$2"; shift ;;
    --steps) STEPS="$2"; shift ;;
    --threads) THREADS="$2"; shift ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    -*) echo "sigma_cost.sh: unknown option $1 (allowed: --config FILE, --rounds N, --steps N, --threads N)" >&2; exit 2 ;;
    *) BUILD="$1" ;;
  esac
  shift
done
for v in "$ROUNDS" "$STEPS" "$THREADS"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "sigma_cost.sh: '$v' is not a positive integer (--rounds, --steps, --threads)" >&2; exit 2; }
done
[[ -x "$BUILD/stx" ]] || { echo "sigma_cost.sh: no stx binary at $BUILD/stx (build first, or pass BUILD_DIR)" >&2; exit 2; }
[[ -f "$CONFIG" ]] || { echo "sigma_cost.sh: no config file $CONFIG" >&2; exit 2; }
OUT=$(mktemp -d /tmp/stx-sigma-cost.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
for r in $(seq 1 "$ROUNDS"); do
  for s in false true; do
    "$BUILD/stx" bench --config "$CONFIG" --set model.sigma_reparam=$s --steps "$STEPS" --warmup 2 --threads "$THREADS" \
      --quiet --json "$OUT/$s-$r.json" > /dev/null
  done
done
/usr/bin/python3 - "$OUT" "$ROUNDS" "$CONFIG" <<'PYEOF'
import json, statistics, sys
out, rounds, config = sys.argv[1], int(sys.argv[2]), sys.argv[3]
runs = {s: [json.load(open(f"{out}/{s}-{r}.json")) for r in range(1, rounds + 1)] for s in ("false", "true")}
print(f"config: {config}  ({runs['false'][0]['layers']} layers, d_model {runs['false'][0]['d_model']}, "
      f"{runs['false'][0]['tokens_per_step']} tokens/step, {runs['false'][0]['threads']} thread(s))")
for r in range(rounds):
    p, s = runs["false"][r], runs["true"][r]
    print(f"round {r + 1}: plain {p['ms_per_step_median']:.1f} ms/step ({p['cpu_ms_per_step']:.1f} CPU)   "
          f"σReparam {s['ms_per_step_median']:.1f} ms/step ({s['cpu_ms_per_step']:.1f} CPU)")
med = lambda s, k: statistics.median(x[k] for x in runs[s])
for k, name in (("ms_per_step_median", "step time"), ("cpu_ms_per_step", "CPU time")):
    print(f"{name}: plain {med('false', k):.1f} ms  σReparam {med('true', k):.1f} ms")
for k in ("ms_forward", "ms_backward", "ms_optimizer"):
    print(f"  {k[3:]}: plain {med('false', k):.1f} ms  σReparam {med('true', k):.1f} ms")
print(f"parameters: plain {runs['false'][0]['parameters']}  σReparam {runs['true'][0]['parameters']} (one γ per linear)")
print(f"peak RSS: plain {med('false', 'peak_rss_mb'):.0f} MB  σReparam {med('true', 'peak_rss_mb'):.0f} MB")
print(f"ratio: {med('true', 'ms_per_step_median') / med('false', 'ms_per_step_median'):.3f}")
print(f"ratio (CPU time): {med('true', 'cpu_ms_per_step') / med('false', 'cpu_ms_per_step'):.3f}")
PYEOF
