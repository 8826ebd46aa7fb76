#!/usr/bin/env bash
# The German→English and language-model runs of docs/training.md, one after another, each
# resumable: a finished run is skipped, an interrupted one continues exactly (--resume), so the
# script can be stopped (Ctrl-C / SIGTERM) and started again at any time.
# Then every translation run is scored on both test sets (beam 4), beside the copy baseline.
# Usage: scripts/train-deen.sh [BUILD_DIR] [SCHEME...]   (default: deepnorm post pre sigma lm-pre)
# Needs the fetched corpora: scripts/fetch-data.sh. About an hour per translation run on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
shift || true
STX="$B/stx"
schemes=("$@")
[ ${#schemes[@]} -gt 0 ] || schemes=(deepnorm post pre sigma lm-pre)

train() {  # train NAME: configs/NAME.yaml → runs/NAME (fresh, or resumed)
  local name=$1 run=runs/$1
  if [ -f "$run/checkpoint_last.safetensors" ]; then
    "$STX" train --out "$run" --resume
  else
    "$STX" train --config "configs/$name.yaml" --out "$run"
  fi
}

for s in "${schemes[@]}"; do
  case $s in
    lm-*) name=$s ;;
    *) name=mt-deen-$s ;;
  esac
  echo "== $name"
  train "$name"
  run=runs/$name
  if [[ $name == mt-* ]]; then
    for split in test-ding test-libreoffice; do
      [ -f "$run/$split.json" ] || "$STX" eval --run "$run" --split "$split" --beam 4 --json "$run/$split.json"
      [ -f "runs/copy-$split.json" ] || "$STX" eval --run "$run" --split "$split" --baseline copy --json "runs/copy-$split.json"
    done
  else
    [ -f "$run/test.json" ] || "$STX" eval --run "$run" --split test --json "$run/test.json"
  fi
done
