# Two entry points, each doing all set-up on a fresh machine:
#   make demo   a local 3-node cluster with its dashboards, until Ctrl-C
#   make test   lint, type checks and the whole test suite
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Exact versions with hashes of every package the venv holds (runtime, test extras, the build
# backend and the lock tool): CI and a fresh clone install the same bytes whatever the registry
# serves today. pyproject.toml keeps the ranges for users of the wheel. `make lock` refreshes it.
LOCK := requirements/lock.txt

.PHONY: demo test lint typecheck unit bench clean lock drift

# A changed lock makes the venv anew (--clear), so it holds the lock and nothing else; the
# project itself goes in editable, without dependencies and without build isolation (its build
# backend comes from the lock too).
$(STAMP): pyproject.toml $(LOCK)
	$(PY) -m venv --clear $(VENV)
	$(BIN)/pip install -q --require-hashes --no-deps -r $(LOCK)
	$(BIN)/pip install -q --no-deps --no-build-isolation -e .
	touch $(STAMP)

# The machine's and the simulator's hot modules compiled with mypyc (swim/native.py), rebuilt
# whenever a source of swim/ changes; until then `import swim` runs them as Python.
NATIVE := build/native/swim/SOURCES
$(NATIVE): $(STAMP) $(shell find swim -name '*.py')
	$(BIN)/python -c 'import swim.native; swim.native.build()'

demo: $(STAMP) $(NATIVE)
	$(BIN)/rt_cluster up -n 3 --name demo --foreground

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP) $(NATIVE)
	$(BIN)/pytest -q

test: lint typecheck unit

# Every benchmark (several hours, the verdict runs most of it), then the README's table of
# figures against their goals (python -m bench.summary --readme).
bench: $(STAMP) $(NATIVE)
	$(BIN)/python -m bench.membership
	$(BIN)/python -m bench.idle
	$(BIN)/python -m bench.idle.wakeups
	$(BIN)/python -m bench.api
	$(BIN)/python -m bench.storage
	$(BIN)/python -m bench.sim
	$(BIN)/python -m bench.cluster --timeout 300
	$(BIN)/python -m bench.cluster --runs thousand --out bench/results/thousand.json
	$(BIN)/python -m bench.chaos
	$(BIN)/python -m bench.explore --only speed --only clean
	RTSIM_PURE=1 $(BIN)/python -m bench.explore --only plants
	$(BIN)/python -m bench.membership.mixed
	$(BIN)/python -m bench.verdicts passrates
	$(BIN)/python -m bench.verdicts calibrate
	$(BIN)/python -m bench.summary --readme

clean:
	rm -rf $(VENV) $(DRIFT) build *.egg-info

# Resolve pyproject.toml's ranges (and requirements/tools.in) again, newest versions first, and
# write the lock; review the diff, run `make test` and commit both (docs/dependencies.md).
# `make lock UPGRADE=` adds what pyproject.toml gained and moves nothing else.
UPGRADE ?= --upgrade
lock: $(STAMP)
	$(BIN)/uv pip compile pyproject.toml requirements/tools.in --extra test $(UPGRADE) \
		--generate-hashes --universal --python-version 3.11 \
		--custom-compile-command 'make lock' -o $(LOCK)

# The drift check: a venv of its own built from pyproject.toml's ranges alone (what a user of
# the wheel gets today), then the whole test command in it. Not CI's path: run it before
# `make lock`, and whenever a dependency may have released (docs/dependencies.md).
DRIFT := .venv-drift
drift:
	$(PY) -m venv --clear $(DRIFT)
	$(DRIFT)/bin/pip install -q -e '.[test]'
	$(DRIFT)/bin/pip freeze --exclude-editable > $(DRIFT)/freeze.txt
	$(DRIFT)/bin/ruff check .
	$(DRIFT)/bin/ruff format --check .
	$(DRIFT)/bin/mypy
	$(DRIFT)/bin/pytest -q

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
