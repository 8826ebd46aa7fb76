#!/usr/bin/env bash
# `make demo`, the main job: one 18-layer byte-level language model (the atlas regime,
# configs/atlas.yaml) under Post-LN, Pre-LN, DeepNorm and Sub-LN (Magneto), trained side by side
# at a learning rate where Post-LN fails (1e-2, warm-up 30 of 300 updates), with a live table of
# the loss, the gradient reach and the largest attention logit, then the sweep's report and
# figures, then stx doctor's verdict on each run from its first 20 updates alone (docs/doctor.md).
# About 3–4 minutes on 2 cores; docs/atlas.md puts it in context.
# Usage: scripts/demo.sh [BUILD_DIR]   (runs/demo is replaced on every run)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
RUN=runs/demo
rm -rf "$RUN"
echo "== four schemes, one 18-layer model, lr 1e-2: which one trains?"
echo "   (bits/byte: the corpus's unigram entropy is 4.43 — a model stuck there learned only byte"
echo "    frequencies; grad reach: bottom-layer ÷ top-layer gradient norm; max logit: the largest"
echo "    attention logit)"
"$B/stx" sweep --config configs/atlas.yaml --schemes post,pre,deepnorm,sub-ln --depths 18 --steps 300 \
  --set train.lr=1e-2 --set train.warmup_steps=30 --set train.eval_every=100 --jobs 4 --watch --out "$RUN"
echo
echo "== stx doctor: could the first 20 of the 300 updates have told? (docs/doctor.md)"
for s in post pre deepnorm sub-ln; do
  "$B/stx" doctor --run "$RUN/$s-L18" --steps 20 | sed -n '1,3p;/^prescription/,/^  --set/p;/^since then/p'
  echo
done
echo "the runs, sweep.md and figures/ are in $RUN; the full map of every scheme × depth × learning"
echo "rate is docs/atlas.md; the translation demo is make demo-translation (docs/training.md)"
