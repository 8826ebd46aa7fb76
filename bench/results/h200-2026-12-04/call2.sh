# The device call of 2026-12-04 (docs/performance.md, "GPU"), as run from the repository root of
# the lent machine with the bundle of scripts/gpu-bundle.sh in gpu-bundle/. As run, the library
# path also listed the first call's unpacked copy of the same bundle outside the repository
# (hence the OpenBLAS path in the logs); it is left out here: gpu-bundle/ holds the same files.
export PYTHONUNBUFFERED=1
STX_BUNDLE=gpu-bundle STX_GPU_TRAIN=cuda STX_GPU_ONLY='d64-l24-b512x64|d64-l1000-b64x64' timeout 170 bash scripts/gpu-check.sh g2 python3
cp g2/gpu-check.log $OUT/; cp g2/train-cuda/metrics.jsonl $OUT/train-cuda-metrics.jsonl; cp g2/train-cuda/train.log $OUT/train-cuda.log 2>/dev/null
TL=$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
export LD_LIBRARY_PATH=$TL:$PWD/gpu-bundle
{ for r in 1 2; do for b in stx-old stx; do
  echo "== round $r $b d512-l6-b64x512"; timeout 40 gpu-bundle/$b bench --config g2/configs/bench-d512-l6-t512.yaml --batch 64 --seq 512 --steps 10 --warmup 2 --set train.device=cuda --quiet | grep -E "^(ms/step|phases)"
  echo "== round $r $b d512-l6-b8x128"; timeout 40 gpu-bundle/$b bench --config configs/bench-d512-l6.yaml --steps 10 --warmup 2 --set train.device=cuda --quiet | grep -E "^(ms/step|phases)"
done; done
echo "== stx deepnet-1000-b64x128"; timeout 100 gpu-bundle/stx bench --config configs/deepnet-1000.yaml --set train.device=cuda --set train.checkpoint_activations=true --batch 64 --seq 128 --steps 3 --warmup 1 --quiet | grep -E "^(shape|ms/step|phases|tokens|GFLOP|sgemm)"
} 2>&1 | tee $OUT/ab.log
