# Two entry points, each doing all set-up on a fresh machine:
#   make demo   a local 3-node cluster with its dashboards, until Ctrl-C
#   make test   lint, type checks and the whole test suite
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck unit bench clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/rt_cluster up -n 3 --name demo --foreground

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest -q

test: lint typecheck unit

# Every benchmark (several hours, the verdict runs most of it), then the README's table of
# figures against their goals (python -m bench.summary --readme).
bench: $(STAMP)
	$(BIN)/python -m bench.membership
	$(BIN)/python -m bench.idle
	$(BIN)/python -m bench.api
	$(BIN)/python -m bench.storage
	$(BIN)/python -m bench.sim
	$(BIN)/python -m bench.cluster --timeout 300
	$(BIN)/python -m bench.verdicts passrates
	$(BIN)/python -m bench.verdicts calibrate
	$(BIN)/python -m bench.summary --readme

clean:
	rm -rf $(VENV) build *.egg-info

# Coverage-guided fuzzing of every parser of outside bytes (fuzz/), longer than CI's pass:
# FUZZ_SECONDS per target (default 600), FUZZ_JOBS at once (about an hour on 2 cores). New
# inputs grow fuzz/work/ (not in git); a defect's input is kept under fuzz/crashes/<target>/.
.PHONY: fuzz
FUZZ_SECONDS ?= 600
FUZZ_JOBS ?= 2
fuzz: $(STAMP)
	$(BIN)/python -m fuzz all --seconds $(FUZZ_SECONDS) --jobs $(FUZZ_JOBS)

# The load test of CI (tests/hostile/test_load.py) for longer (LOAD_SECONDS, default 120) on a
# 2-node cluster of its own: 500 keep-alive clients, 50 slow POSTs, 12 forwards to a paused
# peer and 1,000 idle runtime connections at once, /api/health probed throughout; a table,
# the figures in bench/results/load.json.
.PHONY: load
LOAD_SECONDS ?= 120
load: $(STAMP)
	$(BIN)/python -m bench.load --seconds $(LOAD_SECONDS)

# schemathesis on a fresh 2-node cluster's /openapi.json, longer than CI's run (EXAMPLES cases
# per operation and phase, a drawn seed unless SEED is given); reports and summary.json under
# bench/results/apifuzz/.
.PHONY: fuzz-api
EXAMPLES ?= 300
fuzz-api: $(STAMP)
	$(BIN)/python -m tests.hostile.apifuzz --examples $(EXAMPLES) $(if $(SEED),--seed $(SEED))
