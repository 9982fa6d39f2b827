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
	@# worker); Ctrl-C stops them all. On a small machine the workers' start-up would slow the
	@# server's, so they yield the CPU to it (nice). migrate has just run the system checks, and
	@# the demo server does not reload on code changes (the reloader imports everything twice).
	workers=; for queue in email webhooks default; do \
	nice -n 10 $(PY) manage.py run_worker --no-reload --queue-name $$queue & \
	workers="$$workers $$!"; done; \
	trap 'kill $$workers 2>/dev/null; wait $$workers' EXIT; trap 'exit 130' INT TERM; \
	$(PY) manage.py runserver --noreload --skip-checks $(HOST):$(PORT)

# On every core (pytest-xdist); the topology tests, which share one stack of fixed ports, keep to
# one worker (`--dist loadgroup`, tests/conftest.py).
test: $(VENV)/.installed-dev
	$(VENV)/bin/pytest -n auto --dist loadgroup

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
# PgBouncer, a streaming replica and Redis, started, checked through the balancer, stopped; then
# a rolling restart and a host killed under gates' load (issues 42 and 45), the database's
# primary killed under load, and a point-in-time restore: each prints its figures, and any loss
# fails the check. About 6 minutes.
.PHONY: topology-check
topology-check: $(VENV)/.installed-dev
	flock /tmp/bench.lock $(PY) bench/topology.py --check
	flock /tmp/bench.lock $(PY) deploy/topology/check_rolling.py
	$(MAKE) failover-check restore-drill

# Database failover (issue 45): deploy/topology/patroni-up.sh's cluster (etcd, two Patroni nodes
# in synchronous replication, HAProxy by Patroni's health checks) under the two app hosts, its
# leader's PostgreSQL killed under gate load; the failover time, the failed answers by status,
# acknowledged writes lost (0) and double admissions (0). Needs patroni, etcd-server, haproxy.
# About 2 minutes.
.PHONY: failover-check
failover-check: $(VENV)/.installed-dev
	flock /tmp/bench.lock $(PY) deploy/topology/check_failover.py

# Backups restored (issue 45): a PostgreSQL of its own archiving WAL with pgBackRest, a full
# backup, check-ins through the app, a point-in-time restore into a fresh cluster, checked
# against what the app acknowledged. Needs pgbackrest. About 2 minutes.
.PHONY: restore-drill
restore-drill: $(VENV)/.installed-dev
	$(PY) deploy/topology/restore_drill.py

bench: $(VENV)/.installed-dev
	$(PY) bench/gate.py
	$(PY) bench/event_night.py
	$(PY) bench/isolation.py
	$(PY) bench/scale_out.py
	$(PY) bench/faults.py
	$(PY) bench/hostile.py

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) manage.py makemigrations --check --dry-run

# Dependency drift (issue 27): the fast paths lean on Django, DRF, DOT and django-tasks, so CI
# also runs the whole suite on SQLite against the newest releases pyproject's ranges allow, on
# the newest supported Python (3.12, else the default one), in a venv of its own: a release that
# breaks something is seen the day it is out, and the run doubles as the suite on Python 3.12.
# Eager: every dependency is upgraded to its newest allowed release on every run, even in a venv
# kept from the last one.
DRIFT_VENV := .venv-drift
DRIFT_PYTHON ?= $(or $(PYTHON312),$(PYTHON))
DRIFT_PACKAGES := Django djangorestframework django-oauth-toolkit django-tasks django-tasks-db
# The fast subset (under two minutes on SQLite), which `test-future` runs: the API's read and write paths, the scanner
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
	test -x $(DRIFT_VENV)/bin/python || $(DRIFT_PYTHON) -m venv $(DRIFT_VENV)
	$(DRIFT_VENV)/bin/pip install -q --upgrade pip
	$(DRIFT_VENV)/bin/pip install -q --upgrade --upgrade-strategy eager -e ".[dev]"
	@$(DRIFT_VENV)/bin/python -c 'import sys; from importlib.metadata import version; \
		print(f"Python {sys.version.split()[0]}, newest allowed:", \
		", ".join(f"{p} {version(p)}" for p in sys.argv[1:]))' $(DRIFT_PACKAGES)
	env -u DATABASE_URL -u REDIS_URL -u REQUIRE_ALL_TESTS $(DRIFT_VENV)/bin/pytest \
		-x -q -p no:cacheprovider -n auto --dist loadgroup

# The fast subset again with the clock 400 days ahead (libfaketime, Debian package faketime:
# every process the tests start runs on that clock too), so a test that names a date it does not
# freeze fails the day it is written, not the day that date passes.
.PHONY: test-future
test-future: $(VENV)/.installed-dev
	env -u DATABASE_URL -u REDIS_URL -u REQUIRE_ALL_TESTS faketime -f "+400d" $(VENV)/bin/pytest \
		-m "not browser and not postgres and not redis" -x -q -p no:cacheprovider -n 2 $(DRIFT_TESTS)

clean:
	rm -rf $(VENV) $(VENV312) $(DRIFT_VENV) db.sqlite3 db.sqlite3-* staticfiles media test-output
