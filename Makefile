# Two commands do everything: `make serve` and `make test` (see README.md).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export NO_MKDOCS_2_WARNING := 1
export DISABLE_MKDOCS_2_WARNING := true

.PHONY: serve build test clean

serve: $(VENV)/.site-installed
	$(BIN)/mkdocs serve

build: $(VENV)/.site-installed
	$(BIN)/mkdocs build --strict

# The site is built first, alone: its timing proofs run on a quiet machine and every claim is
# checked against them (a claim that does not hold fails the build). The tests that build the
# project site again then take those runs from the cache instead of timing beside other tests.
test: $(VENV)/.dev-installed
	$(BIN)/mkdocs build --strict
	$(BIN)/python -m pytest

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.site-installed: requirements.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.dev-installed: requirements.txt requirements-dev.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	touch $@ $(VENV)/.site-installed

clean:
	rm -rf site .cache
