#!/usr/bin/env bash
# bench/compare.sh — stx vs PyTorch 2.11 eager and torch.compile on the same model and training
# step, back to back.
#   bench/compare.sh [BUILD_DIR] [--quick] [--shapes d64-l24,d512-l6,d64-l1000,demo] [--threads N] [--same-malloc]
#                    [--peer-own-blas] [--no-compile]
# For each shape it runs `stx bench`, then bench/pytorch_eager.py eager and with --compile
# (inductor; same steps, same threads, OMP_WAIT_POLICY=PASSIVE, denormals flushed in all) and prints
#   shape: …   stx: X tokens/s   pytorch-eager: Y tokens/s   pytorch-compile: Z tokens/s
#   ratio: X/Y   ratio-compile: X/Z   (+ compile time, peak memory of each, sgemm fraction)
# A compile that fails or takes over 10 minutes (STX_COMPILE_TIMEOUT s) prints that instead of
# ratio-compile; --no-compile skips the compiled peer (its runs at 1,000 layers outlast 10 minutes).
# tokens/s and `ratio:` use the mean step time; `ratio (fastest step):` compares the fastest
# steps and `ratio (CPU time):` the process CPU time per step — both steadier on a busy machine
# (CPU time is the best single-thread measure there; with more threads it also counts spinning). stx re-executes itself with glibc malloc tunables
# (stx/core/runtime.h); the peer runs as a user would run it, without them, unless
# --same-malloc gives it the same GLIBC_TUNABLES. Threads: stx's default (one when tokens·d_model² < 2^24,
# as at d64, else the physical cores; the peer gets the same number) unless
# --threads N (on a busy machine --threads 1 gives the steadiest ratios).
# BLAS: the peer runs on the BLAS that stx runs on (stx --version's BLAS line): with stx's default
# OpenBLAS, PyTorch gets the same library through LD_PRELOAD (and OPENBLAS_NUM_THREADS = its
# threads), so that the ratios compare the two programs, not two BLAS libraries — on this AMD
# machine the wheel's MKL is up to 1.4x slower (docs/performance.md). --peer-own-blas leaves the
# peer on its MKL, as a user would run it.
# Shapes (batch x seq per step, steps timed after warm-up; --quick in brackets):
#   d64-l24    configs/bench-d64-l24.yaml    4 x 64,  20 after 3  [5 after 1]   target ratio ≥ 2
#   d512-l6    configs/bench-d512-l6.yaml    8 x 128, 10 after 2  [3 after 1]   target ratio ≥ 1.2, sgemm fraction ≥ 0.5
#   d64-l1000  configs/bench-d64-l1000.yaml  4 x 64,   3 after 1  [1 after 1]   target ratio ≥ 5
#   demo       configs/bench-demo.yaml       16 x 128, 10 after 2 [3 after 1]   (make demo's model)
# The 1,000-layer PyTorch-eager step takes ~15–30 s here, hence its few steps.
# JSON reports are kept in $STX_BENCH_OUT (default: a temporary folder, printed at the end).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build"
QUICK=0
SAME_MALLOC=0
OWN_BLAS=0
NO_COMPILE=0
THREADS=0
SHAPES="d64-l24,d512-l6,d64-l1000,demo"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --same-malloc) SAME_MALLOC=1 ;;
    --peer-own-blas) OWN_BLAS=1 ;;
    --no-compile) NO_COMPILE=1 ;;
    --threads) THREADS="$2"; shift ;;
    --threads=*) THREADS="${1#--threads=}" ;;
    --shapes) SHAPES="$2"; shift ;;
    --shapes=*) SHAPES="${1#--shapes=}" ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    -*) echo "compare.sh: unknown option $1 (allowed: --quick, --shapes LIST, --threads N, --same-malloc, --peer-own-blas, --no-compile)" >&2; exit 2 ;;
    *) BUILD="$1" ;;
  esac
  shift
done
[[ $THREADS =~ ^[0-9]+$ ]] || { echo "compare.sh: --threads $THREADS is not a positive integer" >&2; exit 2; }
IFS=',' read -r -a LIST <<< "$SHAPES"
for s in "${LIST[@]}"; do
  case "$s" in
    d64-l24|d512-l6|d64-l1000|demo) ;;
    *) echo "compare.sh: unknown shape '$s' (allowed: d64-l24, d512-l6, d64-l1000, demo)" >&2; exit 2 ;;
  esac
done
PY=${STX_PYTHON:-$ROOT/.venv/bin/python3}
COMPILE_TIMEOUT=${STX_COMPILE_TIMEOUT:-600}
[[ -x "$BUILD/stx" ]] || { echo "compare.sh: no stx binary at $BUILD/stx (build first, or pass BUILD_DIR)" >&2; exit 2; }
"$PY" -c 'import torch, yaml' 2>/dev/null || { echo "compare.sh: $PY lacks torch or yaml (run scripts/setup.sh: .venv)" >&2; exit 2; }
OUT="${STX_BENCH_OUT:-$(mktemp -d /tmp/stx-bench.XXXXXX)}"
mkdir -p "$OUT"
STX="$OUT/stx"  # a private copy: a rebuild during the minutes this runs cannot swap the binary
cp "$BUILD/stx" "$STX"
export OMP_WAIT_POLICY=PASSIVE
STX_THREADS=()
if [[ $THREADS != 0 ]]; then
  STX_THREADS=(--threads "$THREADS")
fi
EAGER_ENV=(env)
if [[ $SAME_MALLOC == 1 ]]; then
  EAGER_ENV+=(GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296:glibc.malloc.tcache_count=2000)
fi
STX_BLAS_LINE=$("$STX" --version | sed -n 's/^BLAS: //p')
PEER_BLAS="its own (MKL)"
OPENBLAS_LIB=""
if [[ $OWN_BLAS == 0 && $STX_BLAS_LINE == OpenBLAS* ]]; then
  OPENBLAS_LIB=$(sed -n 's/.*(\(\/[^)]*\)).*/\1/p' <<< "$STX_BLAS_LINE" | head -1)
  [[ -f $OPENBLAS_LIB ]] && PEER_BLAS="$OPENBLAS_LIB (LD_PRELOAD)" || OPENBLAS_LIB=""
fi
echo "stx's BLAS: $STX_BLAS_LINE"
echo "peer's BLAS: $PEER_BLAS"

field() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

run_shape() {  # name batch seq steps warmup quick_steps quick_warmup
  local name="$1" batch="$2" seq="$3" steps="$4" warmup="$5"
  if [[ $QUICK == 1 ]]; then steps="$6" warmup="$7"; fi
  local cfg="$ROOT/configs/bench-$name.yaml"
  echo "== $name: $batch x $seq tokens/step, $steps timed steps after $warmup warm-up =="
  "$STX" bench --config "$cfg" --batch "$batch" --seq "$seq" --steps "$steps" --warmup "$warmup" "${STX_THREADS[@]}" \
    --json "$OUT/stx-$name.json" > "$OUT/stx-$name.txt"
  local threads; threads=$(field "$OUT/stx-$name.json" threads)
  local peer_env=("${EAGER_ENV[@]}")
  [[ -n $OPENBLAS_LIB ]] && peer_env+=(LD_PRELOAD="$OPENBLAS_LIB" OPENBLAS_NUM_THREADS="$threads")
  "${peer_env[@]}" "$PY" "$ROOT/bench/pytorch_eager.py" --config "$cfg" --batch "$batch" --seq "$seq" --steps "$steps" \
    --warmup "$warmup" --threads "$threads" --json "$OUT/eager-$name.json" > "$OUT/eager-$name.txt"
  local crc=0
  rm -f "$OUT/compile-$name.json"
  if [[ $NO_COMPILE == 1 ]]; then
    crc=-1
  else
    timeout "$COMPILE_TIMEOUT" "${peer_env[@]}" "$PY" "$ROOT/bench/pytorch_eager.py" --compile --config "$cfg" \
      --batch "$batch" --seq "$seq" --steps "$steps" --warmup "$warmup" --threads "$threads" \
      --json "$OUT/compile-$name.json" > "$OUT/compile-$name.txt" 2>&1 || crc=$?
  fi
  "$PY" - "$OUT/stx-$name.json" "$OUT/eager-$name.json" "$name" "$OUT/compile-$name.json" "$crc" "$COMPILE_TIMEOUT" <<'PYEOF'
import json, os, sys
s, e = (json.load(open(p)) for p in sys.argv[1:3])
cpath, crc, limit = sys.argv[4], int(sys.argv[5]), sys.argv[6]
c = json.load(open(cpath)) if crc == 0 and os.path.exists(cpath) else None
print(f"shape: {sys.argv[3]} (d_model {s['d_model']}, {s['layers']} layers, {s['scheme']}, "
      f"{s['batch']}x{s['seq']} tokens/step, {s['threads']} threads)")
print(f"stx: {s['tokens_per_s']:.1f} tokens/s  ({s['ms_per_step_mean']:.1f} ms/step, peak RSS {s['peak_rss_mb']:.0f} MB)")
print(f"pytorch-eager: {e['tokens_per_s']:.1f} tokens/s  ({e['ms_per_step_mean']:.1f} ms/step, "
      f"peak RSS {e['peak_rss_mb']:.0f} MB, BLAS {e.get('blas', '?')})")
if c:
    print(f"pytorch-compile: {c['tokens_per_s']:.1f} tokens/s  ({c['ms_per_step_mean']:.1f} ms/step, "
          f"peak RSS {c['peak_rss_mb']:.0f} MB; compile {c['compile_s']:.1f} s, not in the ratio)")
print(f"ratio: {s['tokens_per_s'] / e['tokens_per_s']:.2f}")
if c:
    print(f"ratio-compile: {s['tokens_per_s'] / c['tokens_per_s']:.2f}")
elif crc == -1:
    print("ratio-compile: none (not run: --no-compile)")
elif crc == 124:
    print(f"ratio-compile: none (torch.compile did not finish within {limit} s)")
elif crc == 137:
    print("ratio-compile: none (torch.compile was killed, SIGKILL: out of memory? see dmesg)")
else:
    print(f"ratio-compile: none (torch.compile failed, exit {crc}: see {os.path.splitext(cpath)[0]}.txt)")
print(f"ratio (fastest step): {e['ms_per_step_min'] / s['ms_per_step_min']:.2f}")
print(f"ratio (CPU time): {e['cpu_ms_per_step'] / s['cpu_ms_per_step']:.2f}  "
      f"({s['cpu_ms_per_step']:.1f} vs {e['cpu_ms_per_step']:.1f} CPU ms/step)")
print(f"sgemm fraction: {s['sgemm_fraction']:.3f}  ({s['gflops']:.1f} of {s['sgemm_gflops']:.1f} GFLOP/s)")
if s.get("best_gemm_ms_per_step", 0) > 0:
    print(f"stx step / products: {s['ms_per_step_median'] / s['gemm_ms_per_step']:.2f} at the BLAS's rate, "
          f"{s['ms_per_step_median'] / s['best_gemm_ms_per_step']:.2f} at the faster of the BLAS and stx's band kernel")
PYEOF
  echo
}

for s in "${LIST[@]}"; do
  case "$s" in
    d64-l24) run_shape d64-l24 4 64 20 3 5 1 ;;
    d512-l6) run_shape d512-l6 8 128 10 2 3 1 ;;
    d64-l1000) run_shape d64-l1000 4 64 3 1 1 1 ;;
    demo) run_shape demo 16 128 10 2 3 1 ;;
  esac
done
echo "reports: $OUT"
