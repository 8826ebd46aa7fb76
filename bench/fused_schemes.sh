#!/usr/bin/env bash
# bench/fused_schemes.sh — the fused sub-layers against the composed ones, scheme by scheme, in
# one binary, paired: both runs at once, each pinned to one core, the cores swapped every round
# (the machine's noise hits both alike). Prints per scheme the median ms/step of each round and
# composed / fused.
#   bench/fused_schemes.sh [BUILD_DIR] [--config FILE] [--steps N] [--rounds N]
#                          [--schemes scheme:norm,...] [--set KEY=VALUE ...]
# Default: configs/bench-d64-l24.yaml, 40 steps, 3 rounds, the schemes fused since 2026-12-07.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build"
CONFIG="$ROOT/configs/bench-d64-l24.yaml"
STEPS=40
ROUNDS=3
SCHEMES="rezero:none,layerscale:layernorm,peri-ln:layernorm,admin:layernorm,sub-ln:layernorm"
SETS=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --config) CONFIG="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --schemes) SCHEMES="$2"; shift 2 ;;
    --set) SETS+=(--set "$2"); shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    -*) echo "bench/fused_schemes.sh: unknown option $1 (allowed: --config, --steps, --rounds, --schemes, --set)" >&2; exit 2 ;;
    *) BUILD="$1"; shift ;;
  esac
done
for n in "$STEPS" "$ROUNDS"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "bench/fused_schemes.sh: $n is not allowed for --steps/--rounds (a positive integer)" >&2; exit 2; }
done
[[ -f "$CONFIG" ]] || { echo "bench/fused_schemes.sh: --config $CONFIG not found" >&2; exit 2; }
STX="$BUILD/stx"
[[ -x "$STX" ]] || { echo "bench/fused_schemes.sh: $STX not found (make build first)" >&2; exit 2; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
[[ $(nproc) -ge 2 ]] && CORES=(0 1) || CORES=(0 0)
echo "| scheme | fused ms | composed ms | composed / fused |"
echo "|---|---|---|---|"
IFS=, read -ra list <<< "$SCHEMES"
for spec in "${list[@]}"; do
  [[ "$spec" == *:* ]] || { echo "bench/fused_schemes.sh: --schemes entry $spec is not scheme:norm" >&2; exit 2; }
  args=(--config "$CONFIG" "${SETS[@]}" --set "model.scheme=${spec%%:*}" --set "model.norm=${spec##*:}"
        --steps "$STEPS" --quiet)
  for r in $(seq 1 "$ROUNDS"); do
    f=${CORES[$(( r % 2 ))]}; c=${CORES[$(( (r + 1) % 2 ))]}
    STX_THREADS=1 taskset -c "$f" "$STX" bench "${args[@]}" --json "$OUT/f$r.json" > /dev/null &
    pf=$!
    STX_THREADS=1 taskset -c "$c" "$STX" bench "${args[@]}" --kernels composed --json "$OUT/c$r.json" > /dev/null &
    pc=$!
    wait "$pf" && wait "$pc" || { echo "bench/fused_schemes.sh: stx bench failed for $spec" >&2; exit 1; }
  done
  python3 - "$OUT" "$ROUNDS" "$spec" <<'PY'
import json, sys
out, rounds, spec = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ms = lambda k, r: json.load(open(f"{out}/{k}{r}.json"))["ms_per_step_median"]
f = [ms("f", r) for r in range(1, rounds + 1)]
c = [ms("c", r) for r in range(1, rounds + 1)]
j = lambda xs, fmt: " / ".join(fmt % x for x in xs)
print(f"| {spec} | {j(f, '%.1f')} | {j(c, '%.1f')} | {j([b / a for a, b in zip(f, c)], '%.2f')} |")
PY
done
