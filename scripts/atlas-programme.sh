#!/usr/bin/env bash
# The atlas's programme of grids (docs/atlas.md, "The questions a reader asks first"), in the order
# they run: each step is one `stx experiment atlas` directory under docs/, resumable, so a new
# machine carries on from the repository alone (rerun this script; a step whose runs have all
# ended costs seconds). Runs at low priority, two runs at a time, one thread each.
#
#   scripts/atlas-programme.sh [BUILD_DIR] [--list] [--only STEP]
#
# After a step lands (or while it runs): python3 scripts/atlas_numbers.py update docs/atlas.md
# and commit docs/atlas*/atlas.json, atlas.md, figures/ and docs/atlas.md together.
set -euo pipefail
cd "$(dirname "$0")/.."
B=build
LIST=0
ONLY=""
while [ $# -gt 0 ]; do
  case "$1" in
    --list) LIST=1 ;;
    --only) ONLY="$2"; shift ;;
    -*) echo "atlas-programme: unknown option $1 (allowed: --list, --only STEP)" >&2; exit 2 ;;
    *) B="$1" ;;
  esac
  shift
done
STX="$B/stx"
WIDTH_SCHEMES=pre,post,deepnorm,sigma,depth-scaled,rezero,post-init
ATLAS=(experiment atlas --jobs 2)
C="--config configs/atlas.yaml"

# name | what it answers | the atlas arguments
# (QK-LayerNorm and z-loss on Pre-LN, question 5's other pairs, are rows of the main grid.)
STEPS=(
  "seeds-24|three seeds per cell at 6 and 24 layers|$C --out docs/atlas --depths 6,24,96,384 --neighbours 1 --seeds 3 --max-depth 24"
  "stall-eps|question 4: Post-LN's 24-layer stall with Adam eps 1e-12|$C --out docs/atlas-stall/eps1e-12 --set train.eps=1e-12 --schemes post --depths 24 --lrs 1e-3,1e-2 --seeds 3 --nowarm-lr 0"
  "stall-eps16|question 4: ... with Adam eps 1e-16|$C --out docs/atlas-stall/eps1e-16 --set train.eps=1e-16 --schemes post --depths 24 --lrs 1e-3,1e-2 --seeds 3 --nowarm-lr 0"
  "stall-beta2|question 4: ... with beta2 0.999|$C --out docs/atlas-stall/beta2-0.999 --set train.betas=[0.9,0.999] --schemes post --depths 24 --lrs 1e-3,1e-2 --seeds 3 --nowarm-lr 0"
  "stall-noclip|question 4: ... without gradient clipping|$C --out docs/atlas-stall/noclip --set train.clip_norm=0 --schemes post --depths 24 --lrs 1e-3,1e-2 --seeds 3 --nowarm-lr 0"
  "stall-f64|question 4: ... in float64|$C --out docs/atlas-stall/float64 --set train.dtype=float64 --schemes post --depths 24 --lrs 1e-3,1e-2 --seeds 3 --nowarm-lr 0"
  "warmup0|question 5: Pre-LN without warm-up, 6 layers, 7 rates|$C --out docs/atlas-wortsman/warmup0 --schemes pre --depths 6 --warmup 0 --nowarm-lr 0 --seeds 3"
  "warmup200|question 5: Pre-LN with 200 warm-up updates, 6 layers, 7 rates|$C --out docs/atlas-wortsman/warmup200 --schemes pre --depths 6 --warmup 200 --nowarm-lr 0 --seeds 3"
  "indep-wd|question 5: Pre-LN with independent weight decay 1e-4, 6 layers, 7 rates|$C --out docs/atlas-wortsman/independent-wd --set train.weight_decay_mode=independent --set train.weight_decay=1e-4 --schemes pre --depths 6 --nowarm-lr 0 --seeds 3"
  "python|question 3: the Python corpus, 6 and 24 layers|--config configs/atlas-python.yaml --out docs/atlas-python --schemes $WIDTH_SCHEMES --depths 6,24 --lrs 3e-4,1e-3,3e-3,1e-2,3e-2 --seeds 3"
  "width128|question 1: d_model 128, 6 and 24 layers|$C --out docs/atlas-width/d128 --set model.d_model=128 --set model.d_ff=512 --schemes $WIDTH_SCHEMES --depths 6,24 --lrs 3e-4,1e-3,3e-3,1e-2,3e-2 --seeds 3"
  "width256|question 1: d_model 256, 6 layers|$C --out docs/atlas-width/d256 --set model.d_model=256 --set model.d_ff=1024 --schemes $WIDTH_SCHEMES --depths 6 --lrs 3e-4,1e-3,3e-3,1e-2,3e-2 --seeds 3"
  "horizon|question 2: 4,000 updates (x10 tokens) at 24 layers|$C --out docs/atlas-horizon --steps 4000 --schemes pre,depth-scaled,rezero,t-fixup --depths 24 --lrs 3e-3,1e-2 --seeds 3 --nowarm-lr 0"
  "seeds-96|three seeds per cell at 96 layers|$C --out docs/atlas --depths 6,24,96,384 --neighbours 1 --seeds 3 --max-depth 96"
  "retune-384|384 layers: Pre-LN, depth-scaled, ReZero over 4 rates, 3 seeds at the best +- 1|$C --out docs/atlas-384 --schemes pre,depth-scaled,rezero --depths 6,384 --lrs 1e-3,3e-3,1e-2,3e-2 --seeds 3 --neighbours 1 --nowarm-lr 0"
)

for s in "${STEPS[@]}"; do
  IFS='|' read -r name what args <<<"$s"
  if [ "$LIST" = 1 ]; then
    printf '%-12s %s\n             stx %s %s\n' "$name" "$what" "${ATLAS[*]}" "$args"
    continue
  fi
  [ -n "$ONLY" ] && [ "$ONLY" != "$name" ] && continue
  echo "== atlas-programme: $name — $what"
  # shellcheck disable=SC2086  # the step's arguments are words
  nice -n 19 "$STX" "${ATLAS[@]}" $args
done
