# Two commands on a fresh machine: `make run` and `make test` (see README).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check

.PHONY: run test lint typecheck format install install-dev messages bench clean

$(PY):
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is required")'
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(PY)
	$(PIP) install -q -e .
	@touch $@

$(VENV)/.installed-dev: pyproject.toml | $(PY)
	$(PIP) install -q -e '.[dev]'
	@touch $(VENV)/.installed $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

run: $(VENV)/.installed
	@$(PY) -m erp.supervisor

test: $(VENV)/.installed-dev
	$(PY) -m pytest $(PYTEST_ARGS)

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# mypy over erp and ai_agents ([tool.mypy] in pyproject.toml); starts no database.
typecheck: $(VENV)/.installed-dev
	$(VENV)/bin/mypy

format: $(VENV)/.installed-dev
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

messages: $(VENV)/.installed-dev
	$(PY) -m erp.i18n_compile

bench: $(VENV)/.installed
	$(PY) bench/startup.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
