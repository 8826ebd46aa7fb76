#!/usr/bin/env bash
# bench/pair.sh — two stx binaries on the same step, paired: both at once, each pinned to one core,
# the cores swapped every round (the machine's noise hits both alike; bench/ab.sh --old runs them
# one after the other). For a change with no run-time switch: keep the binary from before it.
# Prints per round the median ms/step of each and old / new, then the median of the ratios and
# whether the final losses agree.
#   bench/pair.sh NEW_STX OLD_STX [--config FILE] [--steps N] [--rounds N] [--set KEY=VALUE ...]
# Default: configs/bench-d64-l24.yaml, 40 steps, 6 rounds, STX_THREADS=1.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CONFIG="$ROOT/configs/bench-d64-l24.yaml"
STEPS=40
ROUNDS=6
SETS=()
BIN=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --config) CONFIG="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --set) SETS+=(--set "$2"); shift 2 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    -*) echo "bench/pair.sh: unknown option $1 (allowed: --config, --steps, --rounds, --set)" >&2; exit 2 ;;
    *) BIN+=("$1"); shift ;;
  esac
done
[[ ${#BIN[@]} -eq 2 ]] || { echo "bench/pair.sh: give two stx binaries, NEW_STX OLD_STX (got ${#BIN[@]})" >&2; exit 2; }
for b in "${BIN[@]}"; do [[ -x "$b" ]] || { echo "bench/pair.sh: $b is not an executable" >&2; exit 2; }; done
for n in "$STEPS" "$ROUNDS"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "bench/pair.sh: $n is not allowed for --steps/--rounds (a positive integer)" >&2; exit 2; }
done
[[ -f "$CONFIG" ]] || { echo "bench/pair.sh: --config $CONFIG not found" >&2; exit 2; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
[[ $(nproc) -ge 2 ]] && CORES=(0 1) || CORES=(0 0)
args=(bench --config "$CONFIG" "${SETS[@]}" --steps "$STEPS" --quiet)
for r in $(seq 1 "$ROUNDS"); do
  cn=${CORES[$(( r % 2 ))]}; co=${CORES[$(( (r + 1) % 2 ))]}
  STX_THREADS=1 taskset -c "$cn" "${BIN[0]}" "${args[@]}" --json "$OUT/n$r.json" > /dev/null &
  pn=$!
  STX_THREADS=1 taskset -c "$co" "${BIN[1]}" "${args[@]}" --json "$OUT/o$r.json" > /dev/null &
  po=$!
  wait "$pn" && wait "$po" || { echo "bench/pair.sh: stx bench failed in round $r" >&2; exit 1; }
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
get = lambda k, r: json.load(open(f"{out}/{k}{r}.json"))
ratios = []
for r in range(1, rounds + 1):
    n, o = get("n", r), get("o", r)
    ratios.append(o["ms_per_step_median"] / n["ms_per_step_median"])
    print(f"round {r}: new {n['ms_per_step_median']:.2f} ms  old {o['ms_per_step_median']:.2f} ms  "
          f"old/new {ratios[-1]:.3f}  (new step / products {n['ms_per_step_median'] / n['best_gemm_ms_per_step']:.2f})")
same = get("n", 1)["final_loss"] == get("o", 1)["final_loss"]
print(f"median old/new {statistics.median(ratios):.3f} over {rounds} rounds; final losses "
      + ("equal" if same else f"differ ({get('n', 1)['final_loss']!r} vs {get('o', 1)['final_loss']!r})"))
PY
