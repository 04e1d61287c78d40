#!/usr/bin/env bash
# Create .venv-tinker for the tinker-cookbook adapter tests (tests_tinker) and run them.
# tinker-cookbook 0.6.1 requires tml-renderers>=0.4.1, which the package index this project
# is built from does not have (its newest is 0.2.1), so `pip install tinker-cookbook` does not
# resolve beside .venv. The cookbook imports tml-renderers only to load a model's tokenizer,
# which the tests stand in for. Never touches .venv.
#
#   scripts/tinker_env.sh          create/refresh .venv-tinker if needed, then run the tests
#   scripts/tinker_env.sh create   only create it
#
# What is installed and why:
#   torch==2.13.0 (CPU wheel, via constraints.txt) - the cookbook imports torch (>=2.10);
#   -e . and pytest - frontier-rft with no extra (the adapter needs none), and the runner;
#   tinker-cookbook==0.6.1 --no-deps, and its declared requirements by name, less
#     tml-renderers: tinker (the service client the tests stand in for), chz, transformers, ...
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=.venv-tinker
STAMP=$VENV/.installed-tinker-cookbook-0.6.1

if [[ ! -f $STAMP || pyproject.toml -nt $STAMP || constraints.txt -nt $STAMP ]]; then
  [[ -x $VENV/bin/python ]] || $PYTHON -m venv $VENV
  $VENV/bin/python -m pip install --quiet --upgrade pip
  $VENV/bin/python -m pip install --quiet -c constraints.txt torch==2.13.0 pytest -e . \
    "aiohttp>=3.9.0" "anyio>=4.0.0" "blobfile>=3.0.0" "chz>=0.4.0" "cloudpickle>=3.0.0" \
    "datasets>=2.14.0" "huggingface-hub>=0.20.0" "pillow>=10.0.0" "pydantic>=2.0.0" \
    "pyrage>=1.4.0" "rich>=13.0.0" "safetensors>=0.4.0" "termcolor>=2.0.0" \
    "tiktoken>=0.12.0" "tinker>=0.38.0" "tqdm>=4.60.0" \
    "transformers>=4.57.6,!=5.3.0,!=5.4.*,!=5.5.0,!=5.5.1,!=5.5.2,!=5.5.3,!=5.6.*"
  $VENV/bin/python -m pip install --quiet --no-deps tinker-cookbook==0.6.1
  touch $STAMP
fi
[[ ${1:-} == create ]] && exit 0

export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1
if ! $VENV/bin/python -m pytest -q -p no:cacheprovider tests_tinker; then
  echo "scripts/tinker_env.sh: failed: tests_tinker" >&2
  exit 1
fi
