#!/usr/bin/env bash
# The full-length Countdown experiment (docs/results/countdown.md): the same tiny model,
# seed and budget trained with six selectors, then one held-out comparison with the
# failure taxonomy.
#   scripts/countdown_experiment.sh [OUT_DIR]      (default runs/countdown)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/countdown}
F=.venv/bin/frontier
mkdir -p "$OUT"
[[ -d $OUT/tiny-init ]] || $F build-model --out "$OUT/tiny-init"
[[ -d $OUT/tiny-sft ]] || $F sft --model "$OUT/tiny-init" --out "$OUT/tiny-sft" --measure-pool 240
for s in uniform prioritized bots sec frontier metis; do
  [[ -f $OUT/cd-$s/DONE ]] && continue
  $F train --model "$OUT/tiny-sft" --out "$OUT/cd-$s" --selector "$s" --seed 0
  touch "$OUT/cd-$s/DONE"
done
$F evaluate --compare "$OUT"/cd-*
