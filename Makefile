# Every target creates .venv and installs what it needs by itself; constraints.txt pins
# the CPU torch of this set-up (the package itself never pins torch).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-dev
DEMO_SIM := $(VENV)/.installed-demo-sim
DEMO_REAL := $(VENV)/.installed-demo-real

.PHONY: demo demo-sim demo-countdown test test-verl sandbox lint format bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml constraints.txt | $(PY)
	$(PY) -m pip install --quiet -c constraints.txt -e ".[dev,plot,train,trl,ray,math,reasoning-gym]"
	touch $(STAMP)

# `make demo` installs each step's needs just before it: numpy, scikit-learn and matplotlib
# for the simulated benchmark, then torch and transformers for the real-model comparison.
# The README quotes how long each takes.
demo: demo-sim demo-countdown

$(DEMO_SIM): pyproject.toml constraints.txt | $(PY)
	$(PY) -m pip install --quiet -c constraints.txt -e ".[plot]"
	touch $(DEMO_SIM)

$(DEMO_REAL): $(DEMO_SIM)
	$(PY) -m pip install --quiet -c constraints.txt -e ".[plot,train]"
	touch $(DEMO_REAL)

demo-sim: $(DEMO_SIM)
	$(VENV)/bin/frontier demo

demo-countdown: $(DEMO_REAL) demo-sim
	$(VENV)/bin/frontier demo-countdown

test: $(STAMP) sandbox
	$(PY) -m pytest -q
	scripts/verl_env.sh

# Code tasks (and reasoning-gym scorers, which eval answers) run inside bubblewrap.
sandbox:
	@command -v bwrap >/dev/null || { if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq bubblewrap; else sudo -n apt-get install -y -qq bubblewrap 2>/dev/null || echo "bubblewrap unavailable: sandboxed code tests will be skipped"; fi; }

# verl pins an older transformers, so its adapter tests run in their own .venv-verl.
test-verl:
	scripts/verl_env.sh

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks
	$(VENV)/bin/mypy src

format: $(STAMP)
	$(VENV)/bin/ruff format src tests benchmarks
	$(VENV)/bin/ruff check --fix src tests benchmarks

bench: $(STAMP)
	$(PY) benchmarks/overhead.py

clean:
	rm -rf $(VENV) .venv-verl .ray_tmp build dist *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
