# Entry points behind the README's two commands.
# The virtual environment lives in the clone (.venv); pip's and the drivers'
# build caches live outside it (~/.cache), so a fresh clone rebuilds quickly.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN     = $(VENV)/bin
SUITE  ?= quick

.PHONY: run test setup drivers clean

run: setup
	$(BIN)/fhemark run --suite $(SUITE)

test: setup
	$(BIN)/python -m pytest

setup: $(BIN)/.installed drivers

$(BIN)/.installed: pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "fhemark needs Python 3.11+: install it and run make PYTHON=/path/to/python3.11")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

# Every driver with a build.sh builds itself into ~/.cache/fhemark (outside the
# clone); one that lacks its toolchain says so in one line and is skipped.
drivers: $(BIN)/.installed
	@for b in drivers/*/build.sh; do [ -f "$$b" ] || continue; (cd "$$(dirname $$b)" && PYTHON=$(abspath $(BIN))/python bash build.sh) || exit 1; done

clean:
	rm -rf $(VENV) report fhemark.db
