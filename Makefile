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

bench: $(STAMP)
	$(BIN)/python -m bench.membership
	$(BIN)/python -m bench.api
	$(BIN)/python -m bench.storage
	$(BIN)/python -m bench.cluster
	$(BIN)/python -m bench.verdicts passrates
	$(BIN)/python -m bench.verdicts calibrate

clean:
	rm -rf $(VENV) build *.egg-info
