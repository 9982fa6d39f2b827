# The two commands of the README: `make run` (service + demo data) and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test lint serve bench clean

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
	SITE_URL=http://$(HOST):$(PORT) $(PY) manage.py bootstrap_demo
	$(PY) manage.py runserver $(HOST):$(PORT)

test: $(VENV)/.installed-dev
	$(VENV)/bin/pytest

serve: $(VENV)/.installed
	PYTHON=$(PY) HOST=$(HOST) PORT=$(PORT) SECURE_SSL_REDIRECT=$${SECURE_SSL_REDIRECT:-false} ./deploy/serve.sh

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
	rm -rf $(VENV) db.sqlite3 db.sqlite3-* staticfiles media test-output
