#!/usr/bin/env bash
# The GPU check of docs/performance.md, for a machine with an NVIDIA GPU and a CUDA build of
# PyTorch 2.x (its LibTorch is used: -DSTX_PYTHON=that python). In one go it
#   1. builds stx in build-gpu/ against that LibTorch,
#   2. runs the test suite there (the tests compute on the CPU; they check the build),
#   3. trains a tiny model on cuda (bf16 autocast) and on the CPU from the same θ₀ and prints
#      both loss curves (they agree to bf16 precision, not bit for bit),
#   4. runs `stx bench` on cuda at a few sizes (tokens/s, GFLOP/s, MFU against the bf16 peak),
#   5. DeepNet's 1,000-layer configuration (500-500 encoder-decoder, d=512, 8 heads,
#      d_ff=2048) in bf16 with activation checkpointing: step time and memory.
# Results: OUT/gpu-check.log and OUT/*.json.
#   Usage: scripts/gpu-check.sh [--rehearse] [OUT] [PYTHON]
# It installs nothing. The C++ dependencies come from the machine or, on a machine without
# -dev packages, from the prefix that scripts/gpu-prepare.sh gathered (STX_DEPS, default gpu-deps/
# when it exists). --rehearse stops before the first step that needs a GPU (scripts/gpu-rehearse.sh
# runs it so in a clean Debian root). STX_GPU_TESTS: a ctest -R regex for step 2 (default: every
# test that needs no package the GPU machine lacks).
set -uo pipefail
cd "$(dirname "$0")/.."
REHEARSE=0
if [ "${1:-}" = "--rehearse" ]; then REHEARSE=1; shift; fi
OUT=${1:-gpu-check}
PY=${2:-python3}
DEPS=${STX_DEPS:-gpu-deps}
CMAKE_DEPS=()
if [ -d "$DEPS/root/usr" ]; then
  DEPS=$(cd "$DEPS" && pwd)
  CMAKE_DEPS=(-DCMAKE_PREFIX_PATH="$DEPS/root/usr" -DSTX_BLAS=mkl)  # no OpenBLAS there: LibTorch's MKL
  export LD_LIBRARY_PATH="$DEPS/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
PEAK_TFLOPS=${PEAK_TFLOPS:-989}  # dense bf16 of an H100/H200 SXM; set for other GPUs
mkdir -p "$OUT"
exec > >(tee "$OUT/gpu-check.log") 2>&1
say() { echo; echo "== $*"; }

say "machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || echo "no nvidia-smi"
"$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available(), "cxx11abi", torch._C._GLIBCXX_USE_CXX11_ABI)' || { echo "no python torch"; exit 2; }
nproc
if [ ${#CMAKE_DEPS[@]} -gt 0 ]; then echo "C++ dependencies from $DEPS:"; cat "$DEPS/VERSIONS"; fi

say "build (build-gpu, LibTorch from $PY)"
t0=$(date +%s)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTX_PYTHON="$(command -v "$PY")" "${CMAKE_DEPS[@]}" \
  && cmake --build build-gpu -j "$(nproc)" || { echo "BUILD FAILED"; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
STX=build-gpu/stx
"$STX" --version

say "tests (CPU computations, this build)"
# Not there: nltk and torchscale (their reference tests), clang-format (the format check); the
# PyTorch parity suite is left to CI (long, and the same on every machine).
SKIP='py\.ref\.(test_parity|test_torchscale|test_bleu_nltk|test_sacrebleu)|format\.check'
(cd build-gpu && ctest -j "$(nproc)" --output-on-failure -E "$SKIP" ${STX_GPU_TESTS:+-R "$STX_GPU_TESTS"} 2>&1 | tail -15)

if [ "$REHEARSE" = 1 ]; then
  say "rehearsal: stopping before the first step that needs a GPU (the tiny cuda-vs-cpu run)"
  exit 0
fi

say "tiny training run: cuda (bf16 autocast) vs cpu, same config and θ₀"
cfg=configs/demo.yaml
for dev in cuda cpu; do
  rm -rf "$OUT/tiny-$dev"
  "$STX" train --config "$cfg" --out "$OUT/tiny-$dev" --set train.device=$dev --set train.max_steps=60 \
    --set train.log_every=10 --set train.eval_every=60 --set train.checkpoint_every=60 2>&1 | tail -2
done
"$PY" - "$OUT" <<'PYEOF'
import json, sys
out = sys.argv[1]
def losses(d):
    return {r["step"]: r["loss"] for r in map(json.loads, open(f"{out}/tiny-{d}/metrics.jsonl")) if "loss" in r}
c, g = losses("cpu"), losses("cuda")
for s in sorted(c):
    print(f"step {s:4d}  cpu {c[s]:.4f}  cuda-bf16 {g.get(s, float('nan')):.4f}")
PYEOF

say "stx bench on cuda"
for c in configs/bench-d64-l24.yaml configs/bench-d512-l6.yaml configs/bench-d64-l1000.yaml; do
  n=$(basename "$c" .yaml)
  "$STX" bench --config "$c" --set train.device=cuda --steps 20 --json "$OUT/$n-cuda.json" | tail -8
done
"$STX" bench --config configs/bench-d512-l6.yaml --set train.device=cuda --batch 32 --seq 512 --steps 20 \
  --json "$OUT/bench-d512-l6-b32x512-cuda.json" | tail -8

say "DeepNet 1,000 layers (500-500, d=512, 8 heads, d_ff=2048), bf16, activation checkpointing"
"$STX" bench --config configs/deepnet-1000.yaml --set train.device=cuda --set train.checkpoint_activations=true \
  --batch 8 --seq 128 --steps 5 --warmup 1 --json "$OUT/deepnet-1000-cuda.json" | tail -8

say "MFU against ${PEAK_TFLOPS} TFLOP/s bf16"
"$PY" - "$OUT" "$PEAK_TFLOPS" <<'PYEOF'
import glob, json, sys
out, peak = sys.argv[1], float(sys.argv[2])
for f in sorted(glob.glob(f"{out}/*-cuda.json")):
    j = json.load(open(f))
    g = j.get("gflops") or 0
    print(f"{f.split('/')[-1]:40s} {j.get('tokens_per_s', 0):12.0f} tok/s  {g/1000:8.1f} TFLOP/s  MFU {g/1000/peak:6.1%}")
PYEOF
