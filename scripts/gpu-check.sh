#!/usr/bin/env bash
# The GPU check of docs/performance.md, for a machine with an NVIDIA GPU and a CUDA build of
# PyTorch 2.x (its LibTorch is used: -DSTX_PYTHON=that python). In one go it
#   1. builds stx in build-gpu/ against that LibTorch and runs the test suite there (the tests
#      compute on the CPU; they check the build) — or, with STX_BUNDLE=DIR, takes the prebuilt stx
#      that scripts/gpu-bundle.sh packed on a CI-like machine (no build, no tests: minutes of GPU
#      time saved),
#   2. trains the atlas's byte-level model (24 layers, docs/atlas.md) on cuda (bf16 autocast) and on
#      the CPU from the same θ₀ and prints both loss curves (they agree to bf16 precision, not bit
#      for bit),
#   3. runs `stx bench` on cuda on the three bench shapes, at their CPU-sized batches and at
#      GPU-sized ones, side by side with PyTorch eager and torch.compile on the same GPU
#      (bench/pytorch_eager.py --device cuda),
#   4. DeepNet's 1,000-layer configuration (500-500 encoder-decoder, d=512, 8 heads,
#      d_ff=2048) in bf16 with activation checkpointing: step time and memory,
#   5. prints a table: tokens/s, TFLOP/s, MFU against the bf16 peak, peak GPU memory.
# Every step has its own time limit and the check goes on past a failed one. Peak GPU memory is
# nvidia-smi's memory.used polled every 100 ms (the caching allocator's reservation: an upper bound).
# Results: OUT/gpu-check.log and OUT/*.json.
#   Usage: [STX_BUNDLE=DIR] scripts/gpu-check.sh [--rehearse] [OUT] [PYTHON]
# It installs nothing. The C++ dependencies come from the machine or, on a machine without
# -dev packages, from the prefix that scripts/gpu-prepare.sh gathered (STX_DEPS, default gpu-deps/
# when it exists). --rehearse stops before the first step that needs a GPU (scripts/gpu-rehearse.sh
# runs it so in a clean Debian root). STX_GPU_TESTS: a ctest -R regex for the tests (default: every
# test that needs no package the GPU machine lacks). STX_GPU_QUICK=1: no 1,000-layer shapes.
# STX_GPU_ONLY: a grep -E regex of the bench names to run (default all); STX_GPU_TRAIN: the devices
# of the training run (default "cuda cpu"; "" for none).
set -uo pipefail
REHEARSE=0
if [ "${1:-}" = "--rehearse" ]; then REHEARSE=1; shift; fi
OUT=${1:-gpu-check}
PY=${2:-python3}
# OUT and STX_BUNDLE are relative to where the script is called from; then to the repository.
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || { echo "gpu-check: cannot create OUT '$OUT'"; exit 2; }
if [ -n "${STX_BUNDLE:-}" ]; then
  STX_BUNDLE=$(cd "$STX_BUNDLE" 2>/dev/null && pwd) || { echo "gpu-check: STX_BUNDLE is not a directory"; exit 2; }
fi
cd "$(dirname "$0")/.."
DEPS=${STX_DEPS:-gpu-deps}
CMAKE_DEPS=()
if [ -d "$DEPS/root/usr" ]; then
  DEPS=$(cd "$DEPS" && pwd)
  CMAKE_DEPS=(-DCMAKE_PREFIX_PATH="$DEPS/root/usr" -DSTX_BLAS=mkl)  # no OpenBLAS there: LibTorch's MKL
  export LD_LIBRARY_PATH="$DEPS/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
PEAK_TFLOPS=${PEAK_TFLOPS:-989}  # dense bf16 of an H100/H200 SXM; set for other GPUs
exec > >(tee "$OUT/gpu-check.log") 2>&1
say() { echo; echo "== $*  [$(date +%T)]"; }

say "machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || echo "no nvidia-smi"
"$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available(), "cxx11abi", torch._C._GLIBCXX_USE_CXX11_ABI)' || { echo "no python torch"; exit 2; }
echo "cores: $(nproc)"

if [ -n "${STX_BUNDLE:-}" ]; then
  say "prebuilt stx from $STX_BUNDLE (scripts/gpu-bundle.sh), LibTorch from $PY"
  LIBS=$(mktemp -d)
  tar -C "$LIBS" -xJf "$STX_BUNDLE/lib.tar.xz" || { echo "gpu-check: cannot unpack $STX_BUNDLE/lib.tar.xz"; exit 1; }
  TORCH_LIB=$("$PY" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
  export LD_LIBRARY_PATH="$TORCH_LIB:$LIBS/lib:$STX_BUNDLE${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  STX="$STX_BUNDLE/stx"
  "$STX" --version || { echo "PREBUILT STX DOES NOT RUN HERE:"; ldd "$STX" | grep -i "not found"; exit 1; }
else
  if [ ${#CMAKE_DEPS[@]} -gt 0 ]; then echo "C++ dependencies from $DEPS:"; cat "$DEPS/VERSIONS"; fi
  say "build (build-gpu, LibTorch from $PY)"
  t0=$(date +%s)
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTX_PYTHON="$(command -v "$PY")" "${CMAKE_DEPS[@]}" \
    && cmake --build build-gpu -j "$(nproc)" || { echo "BUILD FAILED"; exit 1; }
  echo "build: $(( $(date +%s) - t0 )) s"
  STX=$(pwd)/build-gpu/stx
  "$STX" --version
  say "tests (CPU computations, this build)"
  # Not there: nltk and torchscale (their reference tests), clang-format (the format check); the
  # PyTorch parity suite is left to CI (long, and the same on every machine).
  SKIP='py\.ref\.(test_parity|test_torchscale|test_bleu_nltk|test_sacrebleu)|format\.check'
  (cd build-gpu && ctest -j "$(nproc)" --output-on-failure -E "$SKIP" ${STX_GPU_TESTS:+-R "$STX_GPU_TESTS"} 2>&1 | tail -15)
fi

if [ "$REHEARSE" = 1 ]; then
  say "rehearsal: stopping before the first step that needs a GPU (the tiny cuda-vs-cpu run)"
  exit 0
fi

# gpumem NAME CMD...: runs CMD under a time limit (STEP_S, default 150 s) while nvidia-smi polls
# memory.used; writes the peak (MiB) to OUT/NAME.gpumem. A failed step is counted (the exit code).
FAILS=0
gpumem() {
  local name=$1; shift
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 > "$OUT/$name.smi" 2>/dev/null &
  local smi=$!
  timeout -k 10 "${STEP_S:-150}" "$@"
  local rc=$?
  [ "$rc" = 124 ] && echo "!! $name: stopped at its ${STEP_S:-150} s limit"
  kill "$smi" 2>/dev/null; wait "$smi" 2>/dev/null
  sort -n "$OUT/$name.smi" | tail -1 > "$OUT/$name.gpumem"; rm -f "$OUT/$name.smi"
  [ "$rc" = 0 ] || { echo "!! $name: exit $rc"; FAILS=$((FAILS + 1)); }
}

say "training run: the atlas's byte-level model, 24 layers, 100 updates: cuda (bf16 autocast) vs cpu"
for dev in ${STX_GPU_TRAIN-cuda cpu}; do
  rm -rf "$OUT/train-$dev"
  STEP_S=240 gpumem "train-$dev" "$STX" train --config configs/atlas.yaml --out "$OUT/train-$dev" \
    --set model.decoder_layers=24 --set train.device=$dev --set train.max_steps=100 --set train.eval_every=100 \
    --set train.checkpoint_every=100 --set train.warmup_steps=10 --quiet
done
"$PY" - "$OUT" <<'PYEOF'
import json, sys
out = sys.argv[1]
def losses(d):
    try:
        return {r["step"]: r["loss"] for r in map(json.loads, open(f"{out}/train-{d}/metrics.jsonl")) if "loss" in r}
    except OSError:
        return {}
c, g = losses("cpu"), losses("cuda")
for s in sorted(set(c) | set(g)):
    print(f"step {s:4d}  cpu {c.get(s, float('nan')):.4f}  cuda-bf16 {g.get(s, float('nan')):.4f}")
PYEOF

# bench NAME CONFIG [stx bench args]: stx, then PyTorch eager and torch.compile on the same shape
# (PEERS="eager" or "" for none; default "eager compile").
bench() {
  local name=$1 cfg=$2; shift 2
  echo "$name" | grep -qE "${STX_GPU_ONLY:-.}" || return 0
  rm -f "$OUT/$name"-*.json "$OUT/$name"-*.gpumem  # no stale results in the table
  say "bench $name: stx"
  gpumem "$name-stx" "$STX" bench --config "$cfg" --set train.device=cuda --quiet --json "$OUT/$name-stx.json" "$@" \
    > "$OUT/$name-stx.log" 2>&1
  grep -E "^(shape|ms/step|phases|tokens/s|GFLOP|sgemm GFLOP)" "$OUT/$name-stx.log" || tail -5 "$OUT/$name-stx.log"
  local pyargs=() a
  for a in "$@"; do case "$a" in --set|train.*) ;; *) pyargs+=("$a") ;; esac; done
  for peer in ${PEERS-eager compile}; do
    say "bench $name: pytorch-$peer"
    local flag=(); [ "$peer" = compile ] && flag=(--compile)
    gpumem "$name-$peer" "$PY" bench/pytorch_eager.py --config "$cfg" --device cuda --quiet "${flag[@]}" \
      --json "$OUT/$name-$peer.json" "${pyargs[@]}" > "$OUT/$name-$peer.log" 2>&1
    grep -E "^(shape|ms/step|phases|tokens/s|GPU MB|compile)" "$OUT/$name-$peer.log" || tail -5 "$OUT/$name-$peer.log"
  done
}
# The bench shapes at a longer context need model.max_len raised: copies of the configs.
mkdir -p "$OUT/configs"
sed 's/^  max_len: 128/  max_len: 512/' configs/bench-d512-l6.yaml > "$OUT/configs/bench-d512-l6-t512.yaml"

# Most telling first: the GPU-sized d512 shape and DeepNet-1000 (the MFU targets), then the rest.
# torch.compile only where the batch is GPU-sized (minutes of compiling per shape; at 1,000 layers
# it unrolls every layer into one graph).
STEPS=(--steps 10 --warmup 2)
bench d512-l6-b64x512 "$OUT/configs/bench-d512-l6-t512.yaml" --batch 64 --seq 512 "${STEPS[@]}"
# DeepNet 1,000 layers (500-500, d=512, 8 heads, d_ff=2048), bf16, activation checkpointing.
STEP_S=200 PEERS= bench deepnet-1000-b64x128 configs/deepnet-1000.yaml --set train.checkpoint_activations=true \
  --batch 64 --seq 128 --steps 3 --warmup 1
bench d64-l24-b512x64 configs/bench-d64-l24.yaml --batch 512 --seq 64 "${STEPS[@]}"
PEERS=eager bench d512-l6-b8x128 configs/bench-d512-l6.yaml "${STEPS[@]}"
PEERS=eager bench d64-l24-b4x64 configs/bench-d64-l24.yaml "${STEPS[@]}"
if [ "${STX_GPU_QUICK:-0}" != 1 ]; then
  PEERS=eager bench d64-l1000-b4x64 configs/bench-d64-l1000.yaml --steps 5 --warmup 1
  PEERS=eager bench d64-l1000-b64x64 configs/bench-d64-l1000.yaml --batch 64 --seq 64 --steps 5 --warmup 1
fi

say "table: MFU against ${PEAK_TFLOPS} TFLOP/s bf16 (stx's count of the step's matrix-product FLOPs for every peer)"
"$PY" - "$OUT" "$PEAK_TFLOPS" <<'PYEOF'
import glob, json, os, sys
out, peak = sys.argv[1], float(sys.argv[2])
def mem(name):
    try:
        return float(open(f"{out}/{name}.gpumem").read().strip() or 0)
    except (OSError, ValueError):
        return 0.0
rows = {}
for f in sorted(glob.glob(f"{out}/*.json")):
    name = os.path.basename(f)[:-5]
    shape, _, peer = name.rpartition("-")
    rows.setdefault(shape, {})[peer] = json.load(open(f))
print(f"{'shape':22s} {'peer':8s} {'ms/step':>9s} {'tokens/s':>12s} {'TFLOP/s':>8s} {'MFU':>6s} {'GPU MiB':>8s}")
for shape, peers in rows.items():
    flops = peers.get("stx", {}).get("flops_per_step", 0)
    for peer in ("stx", "eager", "compile"):
        j = peers.get(peer)
        if not j:
            continue
        ms = j.get("ms_per_step_mean") or 0
        tf = flops / (ms / 1e3) / 1e12 if ms and flops else 0
        print(f"{shape:22s} {peer:8s} {ms:9.2f} {j.get('tokens_per_s', 0):12.0f} {tf:8.1f} {tf / peak:6.1%} {mem(shape + '-' + peer):8.0f}")
PYEOF
echo "gpu-check: $FAILS step(s) failed"
[ "$FAILS" = 0 ]
