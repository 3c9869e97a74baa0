# Ballast: two commands on a fresh machine -- `make demo` and `make test`.
# Everything installs into .venv in the repo root; nothing is installed by hand.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install demo up down status test test-unit bench schema clean

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet --upgrade pip
	@$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[test]'
	@touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/ballast demo

up: $(STAMP)
	$(BIN)/ballast up

down: $(STAMP)
	$(BIN)/ballast down

status: $(STAMP)
	$(BIN)/ballast status

test: $(STAMP)
	$(BIN)/pytest -q

test-unit: $(STAMP)
	$(BIN)/pytest -q -m 'not integration'

bench: $(STAMP)
	$(BIN)/python -m bench.placement --write BENCHMARKS.md
	$(BIN)/python -m bench.replicas_change --write BENCHMARKS.md
	$(BIN)/python -m bench.rebalance --write BENCHMARKS.md
	$(BIN)/python -m bench.spark_aggregates --write BENCHMARKS.md

schema: $(STAMP)
	$(BIN)/ballast schema --out docs/schemas

clean:
	rm -rf $(VENV) .ballast .pytest_cache
