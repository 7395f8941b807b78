# The two commands of the quick start: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CONFIG ?= config/config.yaml
# `make run` measures into results/<the config's name>-local, so that a published
# results/<name> (e.g. results/ksched-cpu) stays as it was measured
NAME ?= $(shell $(BIN)/knee validate-config --print-name $(CONFIG))-local

.PHONY: run test test-fast test-slow lint docs venv clean-venv

venv: $(BIN)/knee

$(BIN)/knee: envs/workflow.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --disable-pip-version-check -q -r envs/workflow.txt
	$(BIN)/pip install --disable-pip-version-check -q --no-deps -e .
	touch $@

run: venv
	$(BIN)/snakemake --cores all --configfile $(CONFIG) --config name=$(NAME)

# the unit tier, then the tiers that run Snakemake, the engine and the services (in turn,
# under make -j too: the engine tests pin the engine and the load generator apart)
test: venv
	$(MAKE) test-fast
	$(MAKE) test-slow

# the unit tier: no Snakemake run, no engine, no service (tests/conftest.py keeps it so)
test-fast: venv
	$(BIN)/pytest -ra -m "not workflow and not engine and not docker and not slurm"

test-slow: venv
	$(BIN)/pytest -ra -m "workflow or engine or docker or slurm"

lint: venv
	$(BIN)/ruff check workflow tests bench
	$(BIN)/snakefmt --check Snakefile workflow/rules
	$(BIN)/snakemake --lint
	$(BIN)/mypy
	$(MAKE) docs

# the documentation site (docs/, mkdocs.yml) into build/site; a broken link or anchor fails it
docs: venv
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict -q
