# Entry points behind the README's two commands.
# The virtual environment lives in the clone (.venv); pip's and the drivers'
# build caches live outside it (~/.cache), so a fresh clone rebuilds quickly.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN     = $(VENV)/bin
SUITE  ?= quick

.PHONY: run test setup drivers chromium clean

# The first command builds only the drivers the suite uses (TFHE-rs is built the first time a
# suite asks for it); `make setup` builds every driver whose toolchain is here.
run: $(BIN)/.installed
	$(BIN)/fhemark setup --suite $(SUITE)
	$(BIN)/fhemark run --suite $(SUITE)

test: setup $(BIN)/.tested chromium
	$(BIN)/python -m pytest

# tests/test_report_browser.py opens a report in Debian's headless Chromium, driven by its chromedriver.
# Installed when missing and apt-get can run (as root); otherwise one line says why, and that test
# skips with the same reason.
chromium:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing Debian's chromium and chromium-driver for the browser test"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null) \
	    || echo "chromium: apt-get install failed: the browser test will skip"; \
	else echo "chromium: not installed, and apt-get cannot install it here (needs root): the browser test will skip"; fi

setup: $(BIN)/.installed drivers

$(BIN)/.installed: pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "fhemark needs Python 3.11+: install it and run make PYTHON=/path/to/python3.11")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $@

# The tests' own packages (pytest, ruff, scikit-learn, Dask, mkdocs, selenium): make test's alone, so the
# first command does not wait for them (15 s against 34 s of pip on a fresh machine, one core).
$(BIN)/.tested: $(BIN)/.installed pyproject.toml
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

# Every driver with a build builds itself into ~/.cache/fhemark (outside the
# clone); one that lacks its toolchain says so in one line and is skipped; a
# broken build stops make.
drivers: $(BIN)/.installed
	$(BIN)/fhemark setup
	bash drivers/heir/build.sh   # the compiler row (heir->lattigo): its own venv in the cache; one line if it cannot

clean:
	rm -rf $(VENV) report fhemark.db
