#!/usr/bin/env bash
# Create .venv-verl for the verl adapter tests (tests_verl) and run them, then run the TRL
# adapter's tests in the same environment: the proof that the [trl] and [verl] extras share
# one environment. verl pins its own transformers (<5.11), so it cannot share .venv (which
# has the newest transformers the TRL adapter is tested on). Never touches .venv.
#
#   scripts/verl_env.sh          create/refresh .venv-verl if needed, then run the tests
#   scripts/verl_env.sh create   only create it
#
# What is installed and why:
#   torch==2.13.0 (CPU wheel, via constraints.txt) - never a CUDA torch;
#   verl[verl-core]==0.9.1 - verl and the dependencies verl declares for its core
#     (ray, tensordict, torchdata, transformers, datasets, TransferQueue, ...); no GPU extras
#     (vllm, sglang, flash-attn, megatron) - they are not needed to import the trainers;
#   -e ".[trl,verl]" and pytest - frontier-rft with both extras, resolved together by pip
#     (transformers 5.10.x, trl 1.16), and the runner;
#   verl==0.7.1 --no-deps into .venv-verl/verl-0.7.1 - the last verl with the
#     AbstractCurriculumSampler interface; it pins numpy<2, so it is not installed into
#     site-packages but put on PYTHONPATH by one subprocess test.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=.venv-verl
STAMP=$VENV/.installed-verl-0.9.1-trl

if [[ ! -f $STAMP || pyproject.toml -nt $STAMP || constraints.txt -nt $STAMP ]]; then
  [[ -x $VENV/bin/python ]] || $PYTHON -m venv $VENV
  $VENV/bin/python -m pip install --quiet --upgrade pip
  $VENV/bin/python -m pip install --quiet -c constraints.txt \
    torch==2.13.0 "verl[verl-core]==0.9.1" pytest -e ".[trl,verl]"
  $VENV/bin/python -m pip install --quiet --no-deps --upgrade \
    --target $VENV/verl-0.7.1 verl==0.7.1
  touch $STAMP
fi
[[ ${1:-} == create ]] && exit 0

export RAY_AUTH_MODE=disabled HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1
# Not niced, and Ray's workers not either (Ray starts them at nice 15): on a machine busy
# with other work a niced run crawls; CI needs it to finish in its time limit.
export RAY_worker_niceness=0
# Both suites run even when the first fails; the script fails if either did, naming it.
failed=()
$VENV/bin/python -m pytest -q -p no:cacheprovider tests_verl || failed+=(tests_verl)
# The TRL adapter on verl's transformers: its configuration-driven tests, the grpo script and
# its pre-flight checks (the full TRL suite runs in .venv, on the newest transformers).
$VENV/bin/python -m pytest -q -p no:cacheprovider \
  tests/integration/test_trl_config.py tests/integration/test_trl_preflight.py \
  || failed+=("TRL tests in $VENV")
if ((${#failed[@]})); then
  echo "scripts/verl_env.sh: failed: ${failed[*]}" >&2
  exit 1
fi
