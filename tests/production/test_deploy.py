"""The production settings and `make serve`'s script, run as a deployment would run them."""

import io
import json
import logging
import os
import runpy
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.core.checks import run_checks

from tests.oauth.support import free_port

ROOT = Path(__file__).resolve().parent.parent.parent


def _production_env(**extra) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DJANGO_", "PYTEST_")) and key not in ("DATABASE_URL", "DEBUG")
    }
    env.update(
        DJANGO_SETTINGS_MODULE="ticketing.settings.production",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="tickets.example.com",
        EMAIL_BACKEND="django.core.mail.backends.smtp.EmailBackend",
        SITE_URL="https://tickets.example.com",
    )
    env.update(extra)
    return {key: value for key, value in env.items() if value is not None}


def _manage(*args, env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_is_clean_with_a_real_secret_and_host():
    result = _manage("check", "--deploy", "--fail-level", "WARNING", env=_production_env())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_check_deploy_warns_of_a_token_cache_no_other_process_shares():
    env = _production_env(API_TOKEN_CACHE_SECONDS="60")
    env.pop("REDIS_URL", None)
    result = _manage("check", "--deploy", "--fail-level", "WARNING", env=env)
    assert result.returncode != 0
    assert "oauth_setup.W001" in result.stderr


def test_check_deploy_refuses_ticket_links_to_the_bind_address():
    """Without SITE_URL, every ticket link (email, `ticket_url`, webhooks, `.ics`) would name
    where gunicorn listens."""
    result = _manage("check", "--deploy", env=_production_env(SITE_URL=None, HOST="0.0.0.0"))
    assert result.returncode != 0
    assert (
        "(ticketing.E002) SITE_URL is 'http://0.0.0.0:8000' with DEBUG off: ticket links"
        in result.stderr
    )


def test_plain_check_passes_a_loopback_site_url():
    """`make serve`'s trial on this machine: its plain-HTTP links reach only this machine."""
    result = _manage("check", env=_production_env(SITE_URL=None, HOST="127.0.0.1"))
    assert result.returncode == 0, result.stderr


_REFUSED_SITE = "(ticketing.E002) SITE_URL is 'http://tickets.example.com' with DEBUG off"


def test_a_worker_refuses_to_start_without_an_https_site_url():
    env = _production_env(SITE_URL="http://tickets.example.com")
    result = _manage("run_worker", "--no-reload", "--queue-name", "email", env=env)
    assert result.returncode != 0
    assert _REFUSED_SITE in result.stderr


def test_gunicorn_refuses_to_start_without_an_https_site_url():
    """The Procfile's and serve.sh's web process: it exits before binding, answering nothing."""
    port = free_port()
    env = _production_env(SITE_URL="http://tickets.example.com", PORT=str(port))
    result = subprocess.run(
        [sys.executable, "-m", "gunicorn", "-c", "deploy/gunicorn.conf.py"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert f"gunicorn: ?: {_REFUSED_SITE}" in result.stderr
    assert "Booting worker" not in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("site_url", "debug", "refused"),
    [
        ("http://0.0.0.0:8000", False, True),
        ("http://tickets.example.com", False, True),
        ("https://", False, True),
        ("tickets.example.com", False, True),
        ("https://tickets.example.com", False, False),
        ("https://tickets.example.com/box-office", False, False),
        ("http://127.0.0.1:8000", True, False),  # development
        ("http://127.0.0.1:8000", False, False),  # a trial on this machine (`make serve`)
        ("http://localhost:8000", False, False),
        ("http://[::1]:8000", False, False),
        ("http://127.0.0.1.example.com", False, True),
    ],
)
def test_site_url_check(settings, site_url, debug, refused):
    settings.SITE_URL, settings.DEBUG = site_url, debug
    settings.SILENCED_SYSTEM_CHECKS = []
    errors = [e for e in run_checks() if e.id == "ticketing.E002"]  # every process's checks
    if not refused:
        assert errors == []
        return
    (error,) = errors
    assert error.is_serious()
    assert error.msg == (
        f"SITE_URL is {site_url!r} with DEBUG off: ticket links (emails, `ticket_url`, webhook "
        "payloads, calendar files) would point there."
    )
    assert error.hint == (
        "Set SITE_URL to the https:// address clients reach the service at, e.g. "
        "https://tickets.example.com."
    )


@pytest.mark.parametrize(
    "csrf, refused",
    [
        ("ticketing.middleware.CsrfViewMiddleware", False),
        ("django.middleware.csrf.CsrfViewMiddleware", False),
        (None, True),
    ],
)
def test_csrf_middleware_check_knows_our_subclass(settings, csrf, refused):
    """Production silences Django's security.W003, which knows CSRF only by Django's path."""
    kept = [path for path in settings.MIDDLEWARE if not path.endswith(".CsrfViewMiddleware")]
    settings.MIDDLEWARE = kept + ([csrf] if csrf else [])
    settings.SILENCED_SYSTEM_CHECKS = []
    errors = [e for e in run_checks(include_deployment_checks=True) if e.id == "ticketing.E003"]
    assert [e.is_serious() for e in errors] == ([True] if refused else [])


def test_production_refuses_to_start_without_a_secret_key():
    env = _production_env()
    del env["SECRET_KEY"]
    result = _manage("check", env=env)
    assert result.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off." in result.stderr


_SETTINGS_SCRIPT = (
    "import json; from django.conf import settings as s; o = s.DATABASES['default']['OPTIONS'];"
    " print(json.dumps({"
    "'debug': s.DEBUG, 'log_format': s.LOG_FORMAT, 'ssl_redirect': s.SECURE_SSL_REDIRECT, "
    "'staticfiles': s.STORAGES['staticfiles']['BACKEND'], "
    "'middleware0': s.MIDDLEWARE[0], 'db_options': o.get('options'), "
    "'server_side_binding': o.get('server_side_binding'), "
    "'prepare_threshold': o.get('prepare_threshold'), "
    "'token_cache_seconds': s.API_TOKEN_CACHE_SECONDS, 'email_timeout': s.EMAIL_TIMEOUT, "
    "'cache': {k: s.CACHES['strict'].get('OPTIONS', {}).get(k) for k in "
    "('SOCKET_CONNECT_TIMEOUT', 'SOCKET_TIMEOUT', 'BREAKER_SECONDS')}}))"
)


def _settings(**extra) -> dict:
    env = _production_env(DATABASE_URL="postgres://u@127.0.0.1:5432/whatever", **extra)
    if "REDIS_URL" not in extra:
        env.pop("REDIS_URL", None)
    result = _manage("shell", "--no-imports", "-c", _SETTINGS_SCRIPT, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_production_settings_values():
    assert _settings() == {
        "debug": False,
        "log_format": "json",
        "ssl_redirect": True,
        "staticfiles": "whitenoise.storage.CompressedManifestStaticFilesStorage",
        "middleware0": "ticketing.middleware.RequestIdMiddleware",
        "db_options": "-c statement_timeout=15000",
        "server_side_binding": True,
        "prepare_threshold": 2,
        # Without a shared cache a revocation could not reach the other processes.
        "token_cache_seconds": 0,
        # A mail server that never answers holds a worker's send attempt this long at most.
        "email_timeout": 10,
        "cache": dict.fromkeys(("SOCKET_CONNECT_TIMEOUT", "SOCKET_TIMEOUT", "BREAKER_SECONDS")),
    }


def test_prepared_statements_off_and_token_cache_on_with_redis():
    values = _settings(DB_PREPARED_STATEMENTS="false", REDIS_URL="redis://127.0.0.1:6379/0")
    assert (values["server_side_binding"], values["prepare_threshold"]) == (None, None)
    assert values["token_cache_seconds"] == 60
    # A hung Redis costs a request 150 ms, then is skipped for 5 s (ticketing.cache).
    assert values["cache"] == {
        "SOCKET_CONNECT_TIMEOUT": 0.15,
        "SOCKET_TIMEOUT": 0.15,
        "BREAKER_SECONDS": 5,
    }


def test_email_and_cache_timeouts_come_from_the_environment():
    values = _settings(
        EMAIL_TIMEOUT="3",
        REDIS_URL="redis://127.0.0.1:6379/0",
        REDIS_TIMEOUT_MS="250",
        REDIS_BREAKER_SECONDS="2",
    )
    assert values["email_timeout"] == 3
    assert values["cache"] == {
        "SOCKET_CONNECT_TIMEOUT": 0.25,
        "SOCKET_TIMEOUT": 0.25,
        "BREAKER_SECONDS": 2,
    }


def test_production_refuses_ticket_emails_to_the_console():
    result = _manage("check", env=_production_env(EMAIL_BACKEND=None))
    assert result.returncode != 0
    assert (
        "ticketing.E001) EMAIL_BACKEND is django.core.mail.backends.console.EmailBackend with "
        "DEBUG off" in result.stderr
    )


def test_serve_refuses_to_start_with_ticket_emails_to_the_console(tmp_path):
    """Even when the migrations are skipped, before gunicorn starts."""
    port = free_port()
    env = _production_env(
        EMAIL_BACKEND=None,
        DATABASE_URL=f"sqlite:///{tmp_path / 'serve.sqlite3'}",
        PORT=str(port),
        SKIP_MIGRATE="1",
        PYTHON=sys.executable,
    )
    result = subprocess.run(
        ["sh", "deploy/serve.sh"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode != 0
    assert "ticketing.E001" in result.stderr
    assert not (tmp_path / "serve.sqlite3").exists()  # nothing ran against the database


def _get(port: int, path: str, **headers) -> tuple[int, dict, bytes]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


@pytest.fixture
def served(tmp_path):
    """`deploy/serve.sh` (what `make serve` runs) on a fresh SQLite file, two workers, on a
    port of its own (tests running at once each start one)."""
    port = free_port()
    log = (tmp_path / "serve.log").open("w+")
    env = _production_env(
        DATABASE_URL=f"sqlite:///{tmp_path / 'serve.sqlite3'}",
        ALLOWED_HOSTS="127.0.0.1",
        PORT=str(port),
        WEB_CONCURRENCY="2",
        SECURE_SSL_REDIRECT="false",
        PYTHON=sys.executable,
    )
    env.pop("REDIS_URL", None)
    process = subprocess.Popen(
        ["sh", "deploy/serve.sh"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            assert process.poll() is None, log.seek(0) or log.read()
            try:
                if _get(port, "/healthz")[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.3)
        else:
            pytest.fail("serve.sh did not become healthy")
        yield SimpleNamespace(log=log, process=process, port=port)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        log.close()


def test_serve_runs_gunicorn_with_health_static_files_and_json_logs(served):
    status, headers, body = _get(served.port, "/healthz", **{"X-Request-ID": "serve-check-1"})
    assert (status, json.loads(body)) == (
        200,
        {
            "status": "ok",
            "database": "ok",
            "cache": "not configured",
            "tasks": {"pending": 0, "oldest_pending_seconds": None, "failed": 0},
        },
    )
    assert headers["X-Request-ID"] == "serve-check-1"

    status, headers, body = _get(served.port, "/static/admin/css/base.css")
    assert status == 200
    assert headers["Content-Type"].startswith("text/css")
    assert b"body" in body

    status, headers, body = _get(served.port, "/api/public/no-such-thing")
    assert status == 404
    assert json.loads(body)["error"] == "not_found"
    assert "Server" not in headers or "gunicorn" in headers["Server"]

    # A worker writes its access line after the response: wait for it, with a deadline.
    expected = ("serve-check-1", "/healthz", 200)
    deadline = time.monotonic() + 10
    while True:
        served.log.seek(0)
        lines = [
            json.loads(line) for line in served.log if line.startswith("{") and line.endswith("\n")
        ]
        access = {
            (entry["request_id"], entry["http_path"], entry["http_status"])
            for entry in lines
            if entry["logger"] == "ticketing.request"
        }
        if expected in access or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert expected in access, access
    assert any(entry["logger"] == "gunicorn.error" for entry in lines)


def _commands_in_session(session: int) -> list[str]:
    """The command lines of the live processes of a session (Linux's /proc)."""
    commands = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, _ppid, _pgrp, sid = stat.read_text().rsplit(")", 1)[1].split()[:4]
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue  # ended meanwhile
        if int(sid) == session and state != "Z":
            commands.append(cmdline.replace(b"\0", b" ").decode().strip())
    return commands


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads Linux's /proc")
def test_serve_runs_a_task_worker_per_queue_and_stops_them_with_gunicorn(served):
    """Emails, webhooks and the rest each have a worker (a hung mail server holds only its
    own); SIGTERM to the script stops gunicorn and every worker, and it exits as gunicorn."""
    session = served.process.pid  # serve.sh leads a session of its own
    deadline = time.monotonic() + 30
    while True:
        workers = sorted(c for c in _commands_in_session(session) if " run_worker " in c)
        if len(workers) >= 3 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert [worker.split(" manage.py ", 1)[1] for worker in workers] == [
        f"run_worker --no-reload --queue-name {queue}" for queue in ("default", "email", "webhooks")
    ]

    served.process.send_signal(signal.SIGTERM)
    assert served.process.wait(timeout=30) == 0
    assert _commands_in_session(session) == []


def test_gunicorn_builds_its_access_line_only_when_asked():
    """The app writes the access line; gunicorn's own, which its JSON logging config would have
    it build for every request, only with `--access-logfile` (tests/oauth/test_log_scrubbing.py
    runs that)."""
    conf = runpy.run_path(str(ROOT / "deploy" / "gunicorn.conf.py"))
    assert conf["accesslog"] is None and conf["logconfig_dict"]
    logger_class = conf["logger_class"]
    logger = logger_class.__new__(logger_class)  # no `setup`: it would configure this process
    built = []
    logger.atoms = lambda *args: built.append(args) or {"s": 200}
    logger._access_log_enabled = True  # what gunicorn derives from the logging config
    logger.access_log = logging.getLogger("tests.gunicorn.access")
    lines = io.StringIO()
    handler = logging.StreamHandler(lines)
    logger.access_log.addHandler(handler)
    logger.access_log.setLevel(logging.INFO)
    try:
        for accesslog in (None, "-"):
            logger.cfg = SimpleNamespace(accesslog=accesslog, access_log_format="%(s)s")
            logger.access("response", "request", {}, 0.001)
    finally:
        logger.access_log.removeHandler(handler)
    assert built == [("response", "request", {}, 0.001)]
    assert lines.getvalue() == "200\n"


@pytest.mark.parametrize(("setting", "own_sockets"), [(None, False), ("0", False), ("1", True)])
def test_workers_share_one_listening_socket_unless_asked(monkeypatch, setting, own_sockets):
    """As deployed, the workers share a socket (a recycled worker's queued connections are not
    reset); `GUNICORN_REUSE_PORT=1` gives each its own, as `bench/gate.py` runs them."""
    monkeypatch.delenv("GUNICORN_REUSE_PORT", raising=False)
    if setting is not None:
        monkeypatch.setenv("GUNICORN_REUSE_PORT", setting)
    conf = runpy.run_path(str(ROOT / "deploy" / "gunicorn.conf.py"))
    assert conf["reuse_port"] is own_sockets


_WORKER_START = """
import gc, runpy, sys
import django
from django.core.wsgi import get_wsgi_application

get_wsgi_application()  # what a gunicorn worker loads before its post_worker_init
hook = runpy.run_path("deploy/gunicorn.conf.py")["post_worker_init"]
loaded, frozen = "tickets.views" in sys.modules, gc.get_freeze_count()
hook(None)
print(loaded, "tickets.views" in sys.modules, gc.get_freeze_count() - frozen > 10_000)
print(sys.getswitchinterval())
"""


@pytest.mark.parametrize(("setting", "interval"), [(None, 0.001), ("5", 0.005)])
def test_workers_load_the_urlconf_and_freeze_it_before_serving(setting, interval):
    """A full garbage collection then skips everything a worker loaded before its first request;
    and a thread back from the database waits at most the switch interval for the interpreter
    (`GUNICORN_SWITCH_INTERVAL_MS`, 1 ms unless set)."""
    env = _production_env()
    env.pop("GUNICORN_SWITCH_INTERVAL_MS", None)
    if setting is not None:
        env["GUNICORN_SWITCH_INTERVAL_MS"] = setting
    done = subprocess.run(
        [sys.executable, "-c", _WORKER_START],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True", "True", str(interval)]
