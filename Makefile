# The two commands of the README: `make run` (service + worker + demo data) and `make test`.
# Python 3.11 or 3.12.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
# The suite on the other supported Python, in a venv of its own (CI's second run).
# pyenv's shims exist for versions that are installed but not selected, hence the trial run.
PYTHON312 ?= $(shell for p in python3.12 $$(pyenv root 2>/dev/null)/versions/3.12*/bin/python3.12; \
	do "$$p" -c "" 2>/dev/null && command -v "$$p" && break; done)
VENV312 := .venv312

.PHONY: run test test-py312 lint serve bench clean

# The service's dependencies; the test tools (a browser driver, schemathesis) only for tests.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed
	$(VENV)/bin/pip install -q -e ".[dev]"
	touch $@

run: $(VENV)/.installed
	$(PY) manage.py migrate --noinput
	HOST=$(HOST) PORT=$(PORT) $(PY) manage.py bootstrap_demo
	@# A task worker per queue beside the server (a hung mail server holds only the email
	@# worker); Ctrl-C stops them all.
	workers=; for queue in email webhooks default; do \
	$(PY) manage.py run_worker --no-reload --queue-name $$queue & workers="$$workers $$!"; done; \
	trap 'kill $$workers 2>/dev/null; wait $$workers' EXIT; trap 'exit 130' INT TERM; \
	$(PY) manage.py runserver $(HOST):$(PORT)

test: $(VENV)/.installed-dev
	$(VENV)/bin/pytest

$(VENV312)/.installed-dev: pyproject.toml
	@test -n "$(PYTHON312)" || { echo "Python 3.12 not found (python3.12, or pyenv's 3.12)" >&2; exit 1; }
	$(PYTHON312) -m venv $(VENV312)
	$(VENV312)/bin/pip install -q --upgrade pip
	$(VENV312)/bin/pip install -q -e ".[dev]"
	touch $@

test-py312: $(VENV312)/.installed-dev
	$(VENV312)/bin/pytest $(PYTEST_ARGS)

serve: $(VENV)/.installed
	PYTHON=$(PY) HOST=$(HOST) PORT=$(PORT) SECURE_SSL_REDIRECT=$${SECURE_SSL_REDIRECT:-false} ./deploy/serve.sh

# The gate's workloads side by side with GET /info in one run (issue 14); needs DATABASE_URL
# (PostgreSQL) and REDIS_URL.
.PHONY: bench-gate
bench-gate: $(VENV)/.installed-dev
	$(PY) bench/gate.py --rounds 3

bench: $(VENV)/.installed-dev
	$(PY) bench/read_api.py
	$(PY) bench/checkin_throughput.py
	$(PY) bench/import_tickets.py
	$(PY) bench/scale_out.py
	$(PY) bench/faults.py
	$(PY) bench/hostile.py

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) manage.py makemigrations --check --dry-run

clean:
	rm -rf $(VENV) $(VENV312) db.sqlite3 db.sqlite3-* staticfiles media test-output
