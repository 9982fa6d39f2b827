"""Tokens are scrubbed from every logged path and query however they are spelled (issue 12):
an encoded name (`access%5Ftoken`), a token in the path, the same function for every log. Of a
query only the names are logged (issue 26)."""

import io
import json
import logging

import pytest

from tests.support import mint_token
from ticketing.logging import JsonFormatter, RequestIdFilter, ScrubTokensFilter, scrub, scrub_url

pytestmark = pytest.mark.django_db

SECRET = "Tk0pSecretValue9x"


@pytest.fixture
def json_log():
    """What the production console handler prints: parsed JSON lines of the request loggers."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(ScrubTokensFilter())
    handler.addFilter(RequestIdFilter())
    handler.setFormatter(JsonFormatter())
    loggers = [logging.getLogger(name) for name in ("ticketing.request", "django.request")]
    old_levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    yield lambda: (stream.getvalue(), [json.loads(line) for line in stream.getvalue().splitlines()])
    for logger, level in zip(loggers, old_levels, strict=True):
        logger.removeHandler(handler)
        logger.setLevel(level)


def _access_line(entries) -> dict:
    (line,) = [entry for entry in entries if entry["logger"] == "ticketing.request"]
    return line


def test_encoded_parameter_name_authenticates_and_is_scrubbed(client, application, json_log):
    raw = mint_token(application=application)
    response = client.get(f"/api/public/organizers?access%5Ftoken={raw}&page=1")
    assert response.status_code == 200  # oauthlib decodes the name: it is a real token use
    text, entries = json_log()
    assert raw not in text
    line = _access_line(entries)
    assert line["http_path"] == "/api/public/organizers?access%5Ftoken&page"
    assert line["message"] == f"GET {line['http_path']} 200"


@pytest.mark.parametrize(
    "requested, logged, django_logged",
    [
        # An encoded `?`: the access line keeps it encoded; Django's line has the decoded path.
        (
            f"/api/public/me%3Faccess_token%3D{SECRET}",
            "/api/public/me%3Faccess_token",
            "/api/public/me?access_token",
        ),
        (f"/api/public/x/access_token={SECRET}", "/api/public/x/access_token=[scrubbed]", None),
        (f"/api/public/x;token={SECRET}/y", "/api/public/x;token=[scrubbed]", None),
        (
            f"/api/public/x/Access%5FToken%3D{SECRET}",
            "/api/public/x/Access_Token=[scrubbed]",
            None,
        ),
    ],
)
def test_token_in_the_path_is_scrubbed_in_every_line(
    client, json_log, requested, logged, django_logged
):
    assert client.get(requested).status_code in (401, 404)
    text, entries = json_log()
    assert SECRET not in text
    assert _access_line(entries)["http_path"] == logged
    # Django's own "Not Found: <path>" line of the same request.
    assert any(
        (django_logged or logged) in entry["message"]
        for entry in entries
        if entry["logger"] != "ticketing.request"
    )


def test_http_path_of_any_logger_is_scrubbed_by_the_formatter():
    record = logging.LogRecord("anything", logging.INFO, __file__, 1, "done", None, None)
    record.http_path = f"/x?access%5Ftoken={SECRET}"
    entry = json.loads(JsonFormatter().format(record))
    assert entry["http_path"] == "/x?access%5Ftoken"


@pytest.mark.parametrize(
    "logger_name, args",
    [
        # Django's development server: the raw request line.
        (
            "django.server",
            ('"%s" %s %s', f"GET /api/public/me?access%5Ftoken={SECRET} HTTP/1.1", 200, 9),
        ),
        # Gunicorn's access log, if an operator turns it on (`--access-logfile`).
        (
            "gunicorn.access",
            ("%(r)s %(s)s", {"r": f"GET /x?%61ccess_token={SECRET} HTTP/1.1", "s": 401}),
        ),
    ],
)
def test_server_access_lines_are_scrubbed_with_encoded_names(logger_name, args):
    logger = logging.getLogger(logger_name)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger.addHandler(handler)
    old_level = logger.level
    logger.setLevel(logging.INFO)
    try:
        logger.info(*args)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
    assert SECRET not in stream.getvalue()
    assert "token HTTP/1.1" in stream.getvalue()


@pytest.mark.parametrize(
    "url, expected",
    [
        (f"/cb?redirect_uri=https%3A%2F%2Fa%2Fcb%3Fcode%3D{SECRET}&state=1",
         "/cb?redirect_uri&state"),
        (f"/x?access%255Ftoken={SECRET}", "/x?access%255Ftoken"),
        ("/x?reference_code=ABC&token=", "/x?reference_code&token"),
        ("/x%0Afake?page=1", "/x%0Afake?page"),
        ("/x\nfake?page=1", "/x\\x0afake?page"),
    ],
)  # fmt: skip
def test_scrub_url(url, expected):
    assert scrub_url(url) == expected


def test_a_hostile_path_costs_little():
    nested = "%25" * 3000 + "41"
    assert scrub(f"GET /{nested} HTTP/1.1") == f"GET /{nested} HTTP/1.1"
