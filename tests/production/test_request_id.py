"""Request ids: accepted when sane, generated otherwise, echoed, and on every log line."""

import io
import json
import logging
import re

import pytest
from django.db import OperationalError
from django.test import override_settings

from ticketing.logging import JsonFormatter, RequestIdFilter, ScrubTokensFilter

pytestmark = pytest.mark.django_db


@pytest.fixture
def json_log():
    """What the production console handler would print, one parsed JSON object per line."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(ScrubTokensFilter())
    handler.addFilter(RequestIdFilter())
    handler.setFormatter(JsonFormatter())
    loggers = [logging.getLogger(name) for name in ("ticketing.request", "ticketing.api")]
    for logger in loggers:
        logger.addHandler(handler)
    old_levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.INFO)
    yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    for logger, level in zip(loggers, old_levels, strict=True):
        logger.removeHandler(handler)
        logger.setLevel(level)


def test_request_id_is_generated_when_absent(client):
    response = client.get("/api/public/no-such-thing")
    assert re.fullmatch(r"[0-9a-f]{32}", response["X-Request-ID"])
    assert client.get("/healthz")["X-Request-ID"] != response["X-Request-ID"]


def test_request_id_from_the_caller_is_echoed(client):
    response = client.get("/healthz", HTTP_X_REQUEST_ID="lb-7f3a.42:edge/1")
    assert response["X-Request-ID"] == "lb-7f3a.42:edge/1"


@pytest.mark.parametrize(
    "hostile",
    [
        "abc\r\nSet-Cookie: session=stolen",
        "abc\nX-Injected: 1",
        "has spaces",
        "x" * 129,
        "",
        "<script>",
    ],
)
def test_request_id_that_is_not_sane_is_replaced(client, hostile):
    response = client.get("/healthz", HTTP_X_REQUEST_ID=hostile)
    assert response.status_code == 200
    assert re.fullmatch(r"[0-9a-f]{32}", response["X-Request-ID"])
    assert "Set-Cookie" not in response and "X-Injected" not in response


def test_access_line_is_json_with_request_id_and_no_token(client, json_log):
    client.get(
        "/api/public/no-such-thing?access_token=SECRETTOKEN123&page=2",
        HTTP_X_REQUEST_ID="trace-1",
    )
    (line,) = [entry for entry in json_log() if entry["logger"] == "ticketing.request"]
    assert line["request_id"] == "trace-1"
    assert line["level"] == "INFO"
    assert line["http_method"] == "GET"
    assert line["http_status"] == 404
    assert line["http_path"] == "/api/public/no-such-thing?access_token&page"
    assert "SECRETTOKEN123" not in json.dumps(line)
    assert isinstance(line["duration_ms"], float)


def test_access_line_escapes_control_characters_in_the_path(client, json_log):
    client.get("/api/public/x%0Afake-line", HTTP_X_REQUEST_ID="trace-2")
    (line,) = [entry for entry in json_log() if entry["logger"] == "ticketing.request"]
    assert line["http_path"] == "/api/public/x\\x0afake-line"


def test_log_lines_written_inside_a_view_carry_the_request_id(app_client, json_log, monkeypatch):
    def outage(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr("ticketing.api.permissions.caller_of", outage)
    with override_settings(DEBUG=False):
        response = app_client.get("/api/public/organizers", HTTP_X_REQUEST_ID="trace-3")
    assert response.status_code == 503
    warnings = [e for e in json_log() if e["logger"] == "ticketing.api"]
    assert [w["request_id"] for w in warnings] == ["trace-3"]
    assert warnings[0]["message"].startswith("database unavailable: OperationalError")
