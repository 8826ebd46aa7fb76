#!/usr/bin/env bash
# bench/ab.sh — what stx's step optimizations buy, measured side by side in one binary: the step as
# it runs by default (fused sub-layers, caching CPU allocator) against the same binary with the
# sub-layers composed of modules and LibTorch's allocator, alternated round by round.
#   bench/ab.sh [BUILD_DIR] [--rounds N] [--shapes d64-l24,d512-l6,d64-l1000,demo] [--old STX]
# --old STX adds a third column: another stx binary (e.g. one built before a change that has no
# run-time switch) on the same shape in the same round.
# Per shape and round it prints ms/step (mean of the timed steps) of each and the ratio
# composed/fused, then the medians, and the products' time at the measured sgemm rate (stx
# bench's "products alone") with the ratio step/products. JSON reports: $STX_BENCH_OUT (default: a
# temporary folder, printed at the end).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build"
ROUNDS=3
SHAPES="d64-l24,d512-l6,d64-l1000,demo"
OLD=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) ROUNDS="$2"; shift 2 ;;
    --shapes) SHAPES="$2"; shift 2 ;;
    --old) OLD="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    -*) echo "bench/ab.sh: unknown option $1 (allowed: --rounds N, --shapes LIST, --old STX)" >&2; exit 2 ;;
    *) BUILD="$1"; shift ;;
  esac
done
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "bench/ab.sh: --rounds $ROUNDS is not allowed (a positive integer)" >&2; exit 2; }
STX="$BUILD/stx"
[[ -x "$STX" ]] || { echo "bench/ab.sh: $STX not found (make build first)" >&2; exit 2; }
[[ -z "$OLD" || -x "$OLD" ]] || { echo "bench/ab.sh: --old $OLD is not an executable" >&2; exit 2; }
OUT="${STX_BENCH_OUT:-$(mktemp -d)}"
mkdir -p "$OUT"

steps_of() {  # timed and warm-up steps per shape
  case "$1" in
    d64-l24) echo "40 3" ;; d512-l6) echo "10 2" ;; d64-l1000) echo "5 2" ;; demo) echo "10 2" ;;
    *) echo "bench/ab.sh: unknown shape $1 (d64-l24, d512-l6, d64-l1000, demo)" >&2; exit 2 ;;
  esac
}
field() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }

IFS=, read -ra shape_list <<< "$SHAPES"
for shape in "${shape_list[@]}"; do
  read -r steps warmup < <(steps_of "$shape")
  config="$ROOT/configs/bench-$shape.yaml"
  echo "shape: $shape ($config, $steps steps after $warmup)"
  for r in $(seq 1 "$ROUNDS"); do
    "$STX" bench --config "$config" --steps "$steps" --warmup "$warmup" --quiet \
      --json "$OUT/$shape-fused-$r.json" > /dev/null
    "$STX" bench --config "$config" --steps "$steps" --warmup "$warmup" --quiet --kernels composed \
      --allocator system --json "$OUT/$shape-composed-$r.json" > /dev/null
    line=$(printf "  round %d: fused+cache %.1f ms  composed+system %.1f ms" "$r" \
      "$(field "$OUT/$shape-fused-$r.json" ms_per_step_mean)" "$(field "$OUT/$shape-composed-$r.json" ms_per_step_mean)")
    if [[ -n "$OLD" ]]; then
      "$OLD" bench --config "$config" --steps "$steps" --warmup "$warmup" --quiet --json "$OUT/$shape-old-$r.json" > /dev/null
      line+=$(printf "  old %.1f ms" "$(field "$OUT/$shape-old-$r.json" ms_per_step_mean)")
    fi
    echo "$line"
  done
  python3 - "$OUT" "$shape" "$ROUNDS" "$OLD" <<'PY'
import json, statistics, sys
out, shape, rounds, old = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
def load(kind): return [json.load(open(f"{out}/{shape}-{kind}-{r}.json")) for r in range(1, rounds + 1)]
fused, composed = load("fused"), load("composed")
med = lambda rs, k: statistics.median(r[k] for r in rs)
f, c = med(fused, "ms_per_step_mean"), med(composed, "ms_per_step_mean")
ratios = [b["ms_per_step_mean"] / a["ms_per_step_mean"] for a, b in zip(fused, composed)]
products = med(fused, "gemm_ms_per_step")
s = f"  median: fused+cache {f:.1f} ms  composed+system {c:.1f} ms  ratio {c / f:.3f} (rounds: " + \
    ", ".join(f"{x:.3f}" for x in ratios) + ")"
if old:
    o = med(load("old"), "ms_per_step_mean")
    s += f"  old {o:.1f} ms (old/fused {o / f:.3f})"
print(s)
print(f"  products alone {products:.1f} ms: step/products fused {f / products:.2f}, composed {c / products:.2f}")
best = med(fused, "best_gemm_ms_per_step")
print(f"  products at the faster of the BLAS and the band kernel {best:.1f} ms: step/products fused {f / best:.2f}, "
      f"composed {c / best:.2f}")
PY
done
echo "JSON reports: $OUT"
