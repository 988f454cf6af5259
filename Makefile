# Two commands for a fresh machine: `make demo` and `make test`. Each creates .venv when it is
# missing and installs the project into it, so nothing has to be installed by hand.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
BENCH_STAMP := $(VENV)/.installed-bench

.PHONY: demo test lint bench faults install dev-up dev-down clean console-shots

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	touch $(BENCH_STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/longrun demo

# Static checks first (seconds), then the suite: ruff (lint + import order) and mypy (strict on
# longrun/), both configured in pyproject.toml.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy

# The suite waits on real stacks (PostgreSQL, the Temporal dev server, CLI subprocesses) far more
# than it computes: run serially, the load stays near 1 on 2 cores. pytest-xdist runs whole files on
# TEST_WORKERS processes (each with its own session stacks; a file's module stack stays on one
# worker), and --durations names what took the time. The longest files are handed out first
# (tests/conftest.py, from the measured tests/file_seconds.json) so that no worker is left with a
# long file at the end. `make test TEST_WORKERS=0` runs serially.
TEST_WORKERS ?= 4
test: lint
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --durations=15 $(PYTEST_ARGS)

bench: $(BENCH_STAMP)
	$(BIN)/python -m bench.run

# Screenshots of the console's inbox (phone width) and a run page, written to .longrun/ by the
# browser tests (needs Debian's chromium: apt-get install -y chromium).
console-shots: $(STAMP)
	LONGRUN_SCREENSHOTS=$(CURDIR)/.longrun $(BIN)/python -m pytest tests/test_console_browser.py -q -k approve_with

faults: $(STAMP)
	$(BIN)/python -m bench.faults

dev-up: $(STAMP)
	$(BIN)/longrun dev up

dev-down: $(STAMP)
	$(BIN)/longrun dev down

clean:
	-$(BIN)/longrun dev down
	rm -rf $(VENV) .longrun
