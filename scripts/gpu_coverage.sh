#!/usr/bin/env bash
# The real-RL evidence for the coverage-keeping selectors (docs/results/coverage.md), on one
# CUDA GPU from a plain checkout. Four parts, each well inside a 10-minute call; a part whose
# runs already exist in RUNS resumes (finished runs are skipped), so a warm machine can run
# them back to back. 5 paired seeds; seeds 0-4 pair with the committed uniform runs (uniform's
# runs are bit-identical across bench-rl invocations).
#
#   scripts/gpu_coverage.sh PART OUT [RUNS]     PART: 512 | 1280 | dapo512 | dapo1280
#
# Every finished run is recorded in OUT/ledger (the run ledger, device class cuda); copy
# OUT/ledger/* into benchmarks/ledger/ and OUT/*.{json,md,png} into benchmarks/results/. Runs
# the committed ledger already holds are not run again.
set -euo pipefail
part=${1:?part: 512, 1280, dapo512 or dapo1280}
out=${2:?output directory}
runs=${3:-/tmp/frontier-runs}
export PYTHONPATH=src
mkdir -p "$out/ledger" && cp -rn benchmarks/ledger/. "$out/ledger/"
bench=(python -m frontier_rft bench-rl --scale standard --device cuda --jobs 16 --seeds 0-4
       --no-effects --ledger "$out/ledger")
case "$part" in
  512) "${bench[@]}" --selectors uniform,greso,skip,bots-epoch \
         --runs "$runs/pool512" --out "$out" --name real_rl_gpu_coverage ;;
  1280) "${bench[@]}" --selectors uniform,greso,skip,bots-epoch --pool-size 1280 \
         --runs "$runs/pool1280" --out "$out" --name real_rl_gpu_coverage_pool1280 ;;
  dapo512) "${bench[@]}" --selectors uniform,dapo,dapo-adaptive,greso-dapo \
         --runs "$runs/pool512" --out "$out" --name real_rl_gpu_coverage_dapo ;;
  dapo1280) "${bench[@]}" --selectors uniform,dapo,dapo-adaptive,greso-dapo --pool-size 1280 \
         --runs "$runs/pool1280" --out "$out" --name real_rl_gpu_coverage_dapo_pool1280 ;;
  *) echo "unknown part '$part': one of 512, 1280, dapo512, dapo1280" >&2; exit 2 ;;
esac
