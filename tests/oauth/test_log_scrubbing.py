"""Tokens never reach a log line (CONTRACT §4), including access logs of real servers."""

import io
import logging
import time
from pathlib import Path

import pytest

from tests.oauth.support import (
    free_port,
    get,
    gunicorn_command,
    running,
    runserver_command,
    server_env,
)
from ticketing.logging import ACCESS_LOGGERS, ScrubTokensFilter, scrub

SECRET = "s3cr3tT0kenValue-_.~+/"


@pytest.mark.parametrize(
    "line, expected",
    [
        (
            f'"GET /api/public/me?access_token={SECRET}&page=2 HTTP/1.1" 200',
            '"GET /api/public/me?access_token=[scrubbed]&page=2 HTTP/1.1" 200',
        ),
        (
            f"POST /oauth/token grant_type=refresh_token&refresh_token={SECRET}&client_secret=x",
            "POST /oauth/token grant_type=refresh_token&refresh_token=[scrubbed]"
            "&client_secret=[scrubbed]",
        ),
        (
            f"GET /callback?code={SECRET}&state=abc",
            "GET /callback?code=[scrubbed]&state=abc",
        ),
        (f"Authorization: Bearer {SECRET}", "Authorization: Bearer [scrubbed]"),
        ("Authorization: Basic Y2xpZW50OnNlY3JldA==", "Authorization: Basic [scrubbed]"),
        (
            f'{{"access_token": "{SECRET}", "token_type": "Bearer"}}',
            '{"access_token": "[scrubbed]", "token_type": "Bearer"}',
        ),
        (f"/oauth/revoke_token token={SECRET}", "/oauth/revoke_token token=[scrubbed]"),
        # Names that merely end like a secret stay readable.
        ("search?reference_code=ABC123&event_id=5", "search?reference_code=ABC123&event_id=5"),
    ],
)
def test_scrub(line, expected):
    assert scrub(line) == expected


def _capture(logger_name: str, *args) -> str:
    logger = logging.getLogger(logger_name)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger.addHandler(handler)
    old_level = logger.level
    logger.setLevel(logging.INFO)
    try:
        logger.warning(*args)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
    return stream.getvalue()


@pytest.mark.parametrize("name", ACCESS_LOGGERS)
def test_access_loggers_carry_the_filter(name):
    filters = logging.getLogger(name).filters
    assert sum(isinstance(f, ScrubTokensFilter) for f in filters) == 1


def test_development_server_access_line_is_scrubbed():
    # The record Django's runserver writes, on its own logger that bypasses settings.LOGGING.
    output = _capture(
        "django.server", '"%s" %s %s', f"GET /api/public/me?access_token={SECRET} HTTP/1.1", 200, 9
    )
    assert SECRET not in output
    assert "access_token=[scrubbed]" in output


def test_gunicorn_access_record_with_dict_args_is_scrubbed():
    output = _capture(
        "gunicorn.access", "%(r)s %(s)s", {"r": f"GET /x?access_token={SECRET}", "s": 401}
    )
    assert output == "GET /x?access_token=[scrubbed] 401\n"


def test_root_console_handler_scrubs_every_logger(caplog):
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(ScrubTokensFilter())
    logging.getLogger().addHandler(handler)
    try:
        logging.getLogger("oauth2_provider").warning("token %s for %s", f"Bearer {SECRET}", "x")
    finally:
        logging.getLogger().removeHandler(handler)
    assert stream.getvalue() == "token Bearer [scrubbed] for x\n"


def _assert_scrubbed(log_text: str, marker: str) -> None:
    assert SECRET not in log_text
    assert marker in log_text, log_text[-3000:]


def _hit(port: int, log: Path, last_line: str) -> None:
    assert get(f"http://127.0.0.1:{port}/api/public/info?access_token={SECRET}")[0] == 200
    assert get(f"http://127.0.0.1:{port}/api/public/nowhere?access_token={SECRET}")[0] == 404
    # Servers write the access line after the response: wait for it before stopping them.
    deadline = time.monotonic() + 10
    while last_line not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.1)


def test_runserver_access_log_has_no_token(tmp_path):
    port = free_port()
    env = server_env(DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}")
    log = tmp_path / "runserver.log"
    with running(runserver_command(port), port=port, env=env, log=log):
        _hit(port, log, "/api/public/nowhere?access_token=[scrubbed] HTTP/1.1")
    text = log.read_text()
    _assert_scrubbed(text, '"GET /api/public/info?access_token=[scrubbed] HTTP/1.1" 200')
    _assert_scrubbed(text, '"GET /api/public/nowhere?access_token=[scrubbed] HTTP/1.1" 404')


def test_gunicorn_access_log_has_no_token(tmp_path):
    port = free_port()
    env = server_env(DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}")
    log = tmp_path / "gunicorn.log"
    access = tmp_path / "access.log"
    command = gunicorn_command(port, "--access-logfile", str(access), "--error-logfile", "-")
    with running(command, port=port, env=env, log=log):
        _hit(port, access, "/api/public/nowhere?access_token=[scrubbed] HTTP/1.1")
    _assert_scrubbed(
        access.read_text(), '"GET /api/public/info?access_token=[scrubbed] HTTP/1.1" 200'
    )
    _assert_scrubbed(log.read_text(), "GET /api/public/nowhere?access_token=[scrubbed] 404")
