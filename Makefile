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

# The demo's /metrics answers this token (fixed and public, like the demo's other credentials).
run: export METRICS_TOKEN ?= demo-metrics-token
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

# The gate's workloads side by side with GET /info in one run (issues 14, 29), driven by wrk;
# needs DATABASE_URL (PostgreSQL), REDIS_URL and wrk. About 5 minutes.
.PHONY: bench-gate
bench-gate: $(VENV)/.installed-dev
	$(PY) bench/gate.py --rounds 3

# Event night (issue 29): the scans/s the gate sustains at p99 ≤ 100 ms, an event with 2 check-in
# types, 2 sync workers (then gthread, the deploy's default), the load stepped up with wrk's
# connections; needs DATABASE_URL (PostgreSQL), REDIS_URL and wrk. About 2 minutes.
.PHONY: bench-night
bench-night: $(VENV)/.installed-dev
	$(PY) bench/event_night.py

# One organizer cannot slow another (issue 28): uploads, gates under uploads, webhooks and email
# beside a hostile organizer, token issuance; needs DATABASE_URL, REDIS_URL and wrk.
.PHONY: bench-isolation
bench-isolation: $(VENV)/.installed-dev
	$(PY) bench/isolation.py

# Hosts that share nothing (issue 32): deploy/topology's two app hosts, two workers, HAProxy,
# PgBouncer, a streaming replica and Redis, started, checked through the balancer, stopped.
.PHONY: topology-check
topology-check: $(VENV)/.installed-dev
	flock /tmp/bench.lock $(PY) bench/topology.py --check

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

# Dependency drift (issue 27): the fast paths lean on Django, DRF, DOT and django-tasks, so CI
# also runs the fast subset against the newest releases pyproject's ranges allow, in a venv of
# its own, and a release that breaks one is seen the day it is out. Eager: every dependency is
# upgraded to its newest allowed release on every run, even in a venv kept from the last one.
DRIFT_VENV := .venv-drift
DRIFT_PACKAGES := Django djangorestframework django-oauth-toolkit django-tasks django-tasks-db
# The fast subset (under three minutes on SQLite): the API's read and write paths, the scanner
# feed and batch, access and the token cache, webhooks' queueing and batching, the plumbing and
# the layering rules. Left to the full run: browser, PostgreSQL-only and shared-Redis tests, and
# the slow files that exercise no library's fast path (deliveries over sockets, URL rules, the
# OpenAPI document, migrations, the demo data).
DRIFT_TESTS := tests/write_api tests/scanner tests/access tests/webhooks tests/foundation \
	tests/read_api tests/test_architecture.py \
	--ignore=tests/webhooks/test_delivery.py --ignore=tests/webhooks/test_ticket_delivery.py \
	--ignore=tests/webhooks/test_ssrf.py --ignore=tests/read_api/test_openapi.py \
	--ignore=tests/foundation/test_order_migration.py \
	--ignore=tests/foundation/test_bootstrap_demo.py

.PHONY: drift-check
drift-check:
	test -x $(DRIFT_VENV)/bin/python || $(PYTHON) -m venv $(DRIFT_VENV)
	$(DRIFT_VENV)/bin/pip install -q --upgrade pip
	$(DRIFT_VENV)/bin/pip install -q --upgrade --upgrade-strategy eager -e ".[dev]"
	@$(DRIFT_VENV)/bin/python -c 'import sys; from importlib.metadata import version; \
		print("newest allowed:", ", ".join(f"{p} {version(p)}" for p in sys.argv[1:]))' \
		$(DRIFT_PACKAGES)
	env -u DATABASE_URL -u REDIS_URL -u REQUIRE_ALL_TESTS $(DRIFT_VENV)/bin/pytest \
		-m "not browser and not postgres and not redis" -x -q -p no:cacheprovider -n 2 $(DRIFT_TESTS)

clean:
	rm -rf $(VENV) $(VENV312) $(DRIFT_VENV) db.sqlite3 db.sqlite3-* staticfiles media test-output
