#!/usr/bin/env bash
# Create .venv-skyrl for the SkyRL adapter tests (tests_skyrl) and run them. SkyRL 0.3.0 pins
# transformers<=5.8 (verl's .venv-verl has 5.10, .venv the newest), so it gets its own
# environment. Never touches .venv or .venv-verl.
#
#   scripts/skyrl_env.sh          create/refresh .venv-skyrl if needed, then run the tests
#   scripts/skyrl_env.sh create   only create it
#
# What is installed and why:
#   torch==2.13.0 (CPU wheel, via constraints.txt) - never a CUDA torch;
#   skyrl==0.3.0 - the newest SkyRL for Python 3.11, with its base dependencies;
#   the pure-Python part of its skyrl-train extra, by name - what `skyrl.train` imports
#     (ray, hydra-core, omegaconf, torchdata, tensordict, loguru, ...). Left out: flash-attn
#     (needs CUDA to build), vllm-router and nixl (inference transport), not needed to import
#     or drive the trainer with generation and policy workers stood in for;
#   -e . and pytest - frontier-rft (its core needs no extra here) and the runner.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=.venv-skyrl
STAMP=$VENV/.installed-skyrl-0.3.0

if [[ ! -f $STAMP || pyproject.toml -nt $STAMP || constraints.txt -nt $STAMP ]]; then
  [[ -x $VENV/bin/python ]] || $PYTHON -m venv $VENV
  $VENV/bin/python -m pip install --quiet --upgrade pip
  $VENV/bin/python -m pip install --quiet -c constraints.txt \
    torch==2.13.0 skyrl==0.3.0 skyrl-gym==0.4.0 ray==2.56.0 hydra-core==1.3.2 omegaconf \
    torchdata tensordict loguru tqdm accelerate jaxtyping func_timeout aiohttp pytest -e .
  touch $STAMP
fi
[[ ${1:-} == create ]] && exit 0

# The tests start no Ray (tests_skyrl checks it); were one started: local, no auth, its
# temp files in the repository, and the suite bounded in time.
export RAY_AUTH_MODE=disabled RAY_TMPDIR="$PWD/.ray_tmp" HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1
export RAY_worker_niceness=0
if ! timeout 900 $VENV/bin/python -m pytest -q -p no:cacheprovider tests_skyrl; then
  echo "scripts/skyrl_env.sh: failed: tests_skyrl" >&2
  exit 1
fi
