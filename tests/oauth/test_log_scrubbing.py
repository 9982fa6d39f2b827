"""Tokens never reach a log line (CONTRACT §4), including access logs of real servers."""

import base64
import io
import json
import logging
import time
from pathlib import Path

import pytest
from django.test import Client

from tests.oauth.support import (
    free_port,
    get,
    gunicorn_command,
    running,
    runserver_command,
    server_env,
)
from tests.support import mint_token
from ticketing.logging import ACCESS_LOGGERS, JsonFormatter, ScrubTokensFilter, scrub, scrub_url

SECRET = "s3cr3tT0kenValue-_.~+/"
# The shape of a token the server issues (DOT: 30 letters and digits).
ISSUED = "Nk6pLzDg41VQXxiFDqIhWhBrJeoV0i"


@pytest.mark.parametrize(
    "line, expected",
    [
        (
            f'"GET /api/public/me?access_token={SECRET}&page=2 HTTP/1.1" 200',
            '"GET /api/public/me?access_token&page HTTP/1.1" 200',
        ),
        (
            f"POST /oauth/token grant_type=refresh_token&refresh_token={SECRET}&client_secret=x",
            "POST /oauth/token grant_type=refresh_token&refresh_token=[scrubbed]"
            "&client_secret=[scrubbed]",
        ),
        (
            f"GET /callback?code={SECRET}&state=abc",
            "GET /callback?code&state",
        ),
        (f"Authorization: Bearer {SECRET}", "Authorization: Bearer [scrubbed]"),
        ("Authorization: Basic Y2xpZW50OnNlY3JldA==", "Authorization: Basic [scrubbed]"),
        (
            f'{{"access_token": "{SECRET}", "token_type": "Bearer"}}',
            '{"access_token": "[scrubbed]", "token_type": "Bearer"}',
        ),
        (f"/oauth/revoke_token token={SECRET}", "/oauth/revoke_token token=[scrubbed]"),
        # Outside a URL, names that merely end like a secret stay readable.
        ("reference_code=ABC123&event_id=5", "reference_code=ABC123&event_id=5"),
        # A name spelled to slip past a list of names.
        (
            f"access_token[]={SECRET}&acc%C3%A9ss_token={SECRET}",
            "access_token[]=[scrubbed]&acc%C3%A9ss_token=[scrubbed]",
        ),
        # A URL's query loses its values, whatever the names.
        ("search?reference_code=ABC123&event_id=5", "search?reference_code&event_id"),
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
    assert output == '"GET /api/public/me?access_token HTTP/1.1" 200 9\n'


def test_gunicorn_access_record_with_dict_args_is_scrubbed():
    output = _capture(
        "gunicorn.access", "%(r)s %(s)s", {"r": f"GET /x?access_token={SECRET}", "s": 401}
    )
    assert output == "GET /x?access_token 401\n"


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


def _hit(port: int, log: Path, *lines: str) -> None:
    assert get(f"http://127.0.0.1:{port}/api/public/info?access_token={SECRET}")[0] == 200
    assert get(f"http://127.0.0.1:{port}/api/public/nowhere?access_token[]={SECRET}")[0] == 404
    # Servers write an access line after its response, each request's from its own thread, in
    # any order: wait for every line before stopping them.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not all(line in log.read_text() for line in lines):
        time.sleep(0.1)


def test_runserver_access_log_has_no_token(tmp_path):
    port = free_port()
    env = server_env(DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}")
    log = tmp_path / "runserver.log"
    with running(runserver_command(port), port=port, env=env, log=log):
        _hit(
            port,
            log,
            "/api/public/info?access_token HTTP/1.1",
            "/api/public/nowhere?access_token[] HTTP/1.1",
        )
    text = log.read_text()
    _assert_scrubbed(text, '"GET /api/public/info?access_token HTTP/1.1" 200')
    _assert_scrubbed(text, '"GET /api/public/nowhere?access_token[] HTTP/1.1" 404')


def test_gunicorn_access_log_has_no_token(tmp_path):
    port = free_port()
    env = server_env(DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}")
    log = tmp_path / "gunicorn.log"
    access = tmp_path / "access.log"
    command = gunicorn_command(port, "--access-logfile", str(access), "--error-logfile", "-")
    with running(command, port=port, env=env, log=log):
        _hit(
            port,
            access,
            "/api/public/info?access_token HTTP/1.1",
            "/api/public/nowhere?access_token[] HTTP/1.1",
        )
    _assert_scrubbed(access.read_text(), '"GET /api/public/info?access_token HTTP/1.1" 200')
    _assert_scrubbed(log.read_text(), "GET /api/public/nowhere?access_token[] 404")


# --- Query values are never logged, whatever the parameter's name -----------------------------

# A query carrying a token under a name that is not quite `access_token`, and the names that
# are logged of it (each followed by `&page`, sent after it).
HOSTILE_QUERIES = [
    ("access_token[]={t}", "access_token[]"),
    ("access_token%00={t}", "access_token%00"),
    ("acc%C3%A9ss_token={t}", "acc%C3%A9ss_token"),
    ("access-token={t}", "access-token"),
    ("ACCESS%E2%80%8BTOKEN={t}", "ACCESS%E2%80%8BTOKEN"),
    ("%EF%BD%81ccess_token={t}", "%EF%BD%81ccess_token"),
    ("access_token%2500={t}", "access_token%2500"),
    ("access_token%3D{t}", "access_token"),
    ("page=1;access_token={t}", "page"),
    ("{t}", "[long-name]"),
]


@pytest.fixture
def everything_logged():
    """All log output, through the production console handler's filter and JSON format."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(ScrubTokensFilter())
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    yield stream
    root.removeHandler(handler)
    root.setLevel(old_level)


@pytest.mark.django_db
@pytest.mark.parametrize("query, names", HOSTILE_QUERIES)
def test_token_under_a_hostile_name_is_not_logged(
    application, member, everything_logged, query, names
):
    token = mint_token(application=application, user=member)
    assert Client().get(f"/api/public/me?access_token={token}").status_code == 200  # valid
    everything_logged.seek(0)
    everything_logged.truncate()
    response = Client().get(f"/api/public/me?{query.format(t=token)}&page=2")
    assert response.status_code == 401
    text = everything_logged.getvalue()
    assert token not in text
    (line,) = [
        entry
        for entry in map(json.loads, text.splitlines())
        if entry["logger"] == "ticketing.request"
    ]
    assert line["http_path"] == f"/api/public/me?{names}&page"
    assert line["message"] == f"GET /api/public/me?{names}&page 401"


@pytest.mark.parametrize("query, names", HOSTILE_QUERIES)
def test_server_access_lines_log_no_query_value(query, names):
    hostile = query.format(t=ISSUED)
    runserver = _capture(
        "django.server", '"%s" %s %s', f"GET /api/public/me?{hostile} HTTP/1.1", 401, 9
    )
    assert runserver == f'"GET /api/public/me?{names} HTTP/1.1" 401 9\n'
    # Gunicorn's access line, with the atoms an operator may add: the query alone and the
    # referer, a page of the client's that may carry the token too.
    gunicorn = _capture(
        "gunicorn.access",
        '"%(r)s" %(s)s q=%(q)s "%(f)s"',
        {
            "r": f"GET /api/public/me?{hostile} HTTP/1.1",
            "s": 401,
            "q": hostile,
            "f": f"https://client.example/page?{hostile}",
        },
    )
    assert ISSUED not in gunicorn
    assert gunicorn == (
        f'"GET /api/public/me?{names} HTTP/1.1" 401 q={names} '
        f'"https://client.example/page?{names}"\n'
    )


def test_a_traceback_logs_no_query_value():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(ScrubTokensFilter())
    logger = logging.getLogger("tests.traceback")
    logger.addHandler(handler)
    try:
        raise ValueError(f"cannot fetch https://hooks.example/x?acc%C3%A9ss_token={SECRET}")
    except ValueError:
        logger.exception("Delivery failed for /x?access_token[]=%s", SECRET)
    finally:
        logger.removeHandler(handler)
    assert SECRET not in stream.getvalue()
    assert "https://hooks.example/x?acc%C3%A9ss_token" in stream.getvalue()


def test_many_or_long_names_are_bounded():
    query = "&".join(f"p{i}=v" for i in range(30))
    assert scrub_url(f"/x?{query}") == "/x?" + "&".join(f"p{i}" for i in range(20)) + "&[+10]"
    assert scrub_url(f"/x?{'n' * 25}=v&page=1") == "/x?[long-name]&page"


def test_introspection_answer_is_not_stored_by_caches(application):
    token = mint_token(application=application)
    for data in ({"token": token}, {"token": "unknown"}):
        response = Client().post(
            "/oauth/introspect",
            data,
            HTTP_AUTHORIZATION="Basic "
            + base64.b64encode(f"{application.client_id}:s3cret".encode()).decode(),
        )
        assert response.status_code == 200
        assert response["Cache-Control"] == "no-store"
    refused = Client().post("/oauth/introspect", {"token": token})
    assert (refused.status_code, refused["Cache-Control"]) == (403, "no-store")
