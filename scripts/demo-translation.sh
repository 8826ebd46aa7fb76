#!/usr/bin/env bash
# `make demo-translation`: train a small Spanish→English DeepNorm model on the embedded Bible verse pairs
# (data/default/bible-es-en; nothing is downloaded), then score it on the held-out test
# chapters, translate a few held-out verses and draw the training figures.
# Usage: scripts/demo-translation.sh [BUILD_DIR]   (runs/demo-translation is replaced on every run)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
RUN=runs/demo-translation
STX="$B/stx"
rm -rf "$RUN"
echo "== stx train --config configs/demo.yaml --out $RUN"
"$STX" train --config configs/demo.yaml --out "$RUN"
echo
echo "== stx eval: the held-out test chapters (beam 4), and the copy-the-source baseline"
"$STX" eval --run "$RUN" --split test --beam 4 --sentences 150
"$STX" eval --run "$RUN" --split test --baseline copy
echo
echo "== stx translate: five held-out verses"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
zcat data/default/bible-es-en/test.es.gz | sed -n '101,105p' > "$tmp/src"
zcat data/default/bible-es-en/test.en.gz | sed -n '101,105p' > "$tmp/ref"
"$STX" translate --run "$RUN" --beam 4 < "$tmp/src" > "$tmp/hyp"
paste -d '\n' "$tmp/src" "$tmp/ref" "$tmp/hyp" | awk '{ printf "%s %s\n", (NR % 3 == 1 ? "  es :" : NR % 3 == 2 ? "  ref:" : "  stx:"), $0; if (NR % 3 == 0) print "" }'
echo "== stx plot"
"$STX" plot "$RUN" --out "$RUN/figures"
echo
echo "the run is in $RUN (metrics.jsonl, checkpoints, figures/); docs/training.md explains it all"
