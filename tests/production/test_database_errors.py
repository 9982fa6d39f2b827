"""Database trouble is a 503 `service_unavailable` with Retry-After, never a 500 with a trace.

Wherever it happens: in a view, in the token lookup, in middleware before any view. Conflicts
that a retry will likely cure (serialization failure, deadlock, lock timeout) say retry in 1 s.
"""

import io
import json
import sys
import time
from contextlib import contextmanager

import psycopg
import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.db import DatabaseError, DataError, IntegrityError, OperationalError, connection
from django.http import HttpResponse
from django.test import Client

from tests.support import mint_token
from ticketing.api.exception_handler import database_unavailable, hostile_input_error

pytestmark = pytest.mark.django_db

UNAVAILABLE = {
    "success": False,
    "error": "service_unavailable",
    "message": "The service is briefly unavailable; try again shortly.",
}
CONFLICT = {
    "success": False,
    "error": "service_unavailable",
    "message": "The request conflicted with a concurrent one; try again.",
}
TIMEOUT = {
    "success": False,
    "error": "service_unavailable",
    "message": "The database took too long to answer; try again shortly.",
}


class _DriverError(Exception):
    """Stands in for psycopg's exception, which Django keeps as __cause__."""

    def __init__(self, sqlstate):
        super().__init__(f"driver error {sqlstate}")
        self.sqlstate = sqlstate


def _django_error(cls, sqlstate=None):
    error = cls(f"database error {sqlstate}")
    error.__cause__ = _DriverError(sqlstate) if sqlstate else None
    return error


@pytest.mark.parametrize(
    ("error", "body", "retry_after"),
    [
        (_django_error(OperationalError), UNAVAILABLE, "5"),
        (_django_error(OperationalError, "08006"), UNAVAILABLE, "5"),  # connection failure
        (_django_error(OperationalError, "57P01"), UNAVAILABLE, "5"),  # admin shutdown
        (_django_error(OperationalError, "40001"), CONFLICT, "1"),  # serialization failure
        (_django_error(OperationalError, "40P01"), CONFLICT, "1"),  # deadlock
        (_django_error(OperationalError, "55P03"), CONFLICT, "1"),  # lock not available
        (_django_error(OperationalError, "57014"), TIMEOUT, "5"),  # statement timeout
    ],
)
def test_database_error_in_a_view_is_503(app_client, monkeypatch, error, body, retry_after):
    def fail(*args, **kwargs):
        raise error

    monkeypatch.setattr("ticketing.api.permissions.caller_of", fail)
    response = app_client.get("/api/public/organizers")
    assert response.status_code == 503
    assert response.json() == body
    assert response["Retry-After"] == retry_after
    assert response["Content-Type"] == "application/json"


def test_interface_error_connection_already_closed_is_503(app_client, monkeypatch):
    from django.db import InterfaceError

    def fail(*args, **kwargs):
        raise InterfaceError("connection already closed")

    monkeypatch.setattr("ticketing.api.permissions.caller_of", fail)
    response = app_client.get("/api/public/organizers")
    assert (response.status_code, response.json()) == (503, UNAVAILABLE)


def test_database_error_in_the_token_lookup_is_503(app_client, monkeypatch):
    def fail(*args, **kwargs):
        raise OperationalError("could not connect to server: Connection refused")

    monkeypatch.setattr(
        "oauth2_provider.oauth2_validators.OAuth2Validator._load_access_token", fail
    )
    response = app_client.get("/api/public/organizers")
    assert (response.status_code, response.json()) == (503, UNAVAILABLE)
    assert response["Retry-After"] == "5"


@pytest.mark.parametrize("error", [IntegrityError("dup"), DatabaseError("syntax error")])
def test_other_database_errors_stay_500_without_details(monkeypatch, error, application):
    """A constraint violation nobody caught, or bad SQL, is a bug: 500, logged, no SQL shown."""
    from tests.support import TokenClient, mint_token

    def fail(*args, **kwargs):
        raise error

    monkeypatch.setattr("ticketing.api.permissions.caller_of", fail)
    api = TokenClient(mint_token(application=application), raise_request_exception=False)
    response = api.get("/api/public/organizers")
    assert response.status_code == 500
    assert response.json() == {
        "success": False,
        "error": "server_error",
        "message": "Something went wrong on our side; it has been logged.",
    }


def test_data_error_from_the_database_is_input_not_an_outage():
    """PostgreSQL refusing a value (NUL byte, integer out of range) is the caller's input."""
    assert database_unavailable(DataError("value out of range")) is None
    error = hostile_input_error(DataError("value out of range"))
    assert (error.status_code, error.code) == (400, "invalid_parameters")


class RaiseInMiddleware:
    """A middleware that fails the way a lost connection fails, before any view runs."""

    error: Exception = OperationalError("terminating connection due to administrator command")

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path != "/ok":
            raise self.error
        return HttpResponse("ok")


@pytest.fixture
def failing_middleware(settings):
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, f"{__name__}.RaiseInMiddleware"]
    settings.DEBUG = False
    yield RaiseInMiddleware
    RaiseInMiddleware.error = OperationalError("terminating connection")


def test_database_error_in_middleware_is_json_503_under_the_api(failing_middleware):
    response = Client(raise_request_exception=False).get("/api/public/info")
    assert response.status_code == 503
    assert response.json() == UNAVAILABLE
    assert response["Retry-After"] == "5"
    assert response["X-Request-ID"]


def test_database_error_in_middleware_is_plain_503_elsewhere(failing_middleware):
    response = Client(raise_request_exception=False).get("/admin/")
    assert response.status_code == 503
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response.content == b"The service is briefly unavailable; try again shortly."
    assert response["Retry-After"] == "5"


def test_other_error_in_middleware_is_json_500_without_trace(failing_middleware):
    failing_middleware.error = ValueError("secret internals /srv/app/settings.py line 3")
    response = Client(raise_request_exception=False).get("/api/public/info")
    assert response.status_code == 500
    assert response.json()["error"] == "server_error"
    assert b"secret internals" not in response.content
    assert b"Traceback" not in response.content


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_real_statement_timeout_is_503(app_client, monkeypatch):
    def slow(*args, **kwargs):
        with connection.cursor() as cursor:
            cursor.execute("SET statement_timeout = 50")
            try:
                cursor.execute("SELECT pg_sleep(2)")
            finally:
                connection.close()  # the session setting must not leak into later tests

    monkeypatch.setattr("ticketing.api.permissions.caller_of", slow)
    response = app_client.get("/api/public/organizers")
    assert (response.status_code, response.json()) == (503, TIMEOUT)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_real_connection_lost_mid_request_is_503_and_the_next_request_reconnects(
    app_client, monkeypatch
):
    """The server ends our session (as a failover or restart does) while the view runs."""
    from ticketing.api import permissions

    real_caller_of = permissions.caller_of

    def killed(*args, **kwargs):
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(pg_backend_pid())")
        return real_caller_of(*args, **kwargs)

    monkeypatch.setattr(permissions, "caller_of", killed)
    response = app_client.get("/api/public/organizers")
    assert (response.status_code, response.json()) == (503, UNAVAILABLE)

    # A server's request cycle closes an unusable connection; the test client leaves that to us.
    connection.close_if_unusable_or_obsolete()
    monkeypatch.setattr(permissions, "caller_of", real_caller_of)
    assert app_client.get("/api/public/organizers").status_code == 200


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_real_serialization_failure_is_503_retry_soon(app_client, monkeypatch):
    """Two SERIALIZABLE transactions that read and write each other's rows: one must fail."""
    import threading

    from django.db import connections, transaction

    from organizers.models import Organizer

    first = Organizer.objects.create(name="A", slug="ser-a")
    second = Organizer.objects.create(name="B", slug="ser-b")
    both_read = threading.Barrier(2, timeout=10)
    other_committed = threading.Event()

    def transaction_of(read, write, *, commit_first):
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE")
            list(Organizer.objects.filter(id=read.id))
            both_read.wait()
            Organizer.objects.filter(id=write.id).update(name="changed")
            if not commit_first:
                other_committed.wait(timeout=10)
        # First committer wins; the later one fails with SQLSTATE 40001.

    def other_gate():
        try:
            transaction_of(second, first, commit_first=True)
        finally:
            other_committed.set()
            connections.close_all()

    def conflicting(*args, **kwargs):
        other = threading.Thread(target=other_gate)
        other.start()
        try:
            transaction_of(first, second, commit_first=False)
        finally:
            other.join()

    monkeypatch.setattr("ticketing.api.permissions.caller_of", conflicting)
    response = app_client.get("/api/public/organizers")
    assert (response.status_code, response.json()) == (503, CONFLICT)
    assert response["Retry-After"] == "1"


def _serve(path: str, token: str):
    """One request through Django's WSGI handler, with the request cycle a server gives it (the
    test client leaves connections alone between requests)."""
    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_AUTHORIZATION": f"Bearer {token}",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(),
        "wsgi.errors": sys.stderr,
    }
    response = WSGIHandler()(environ, lambda status, headers: None)
    response.close()  # what the server does once it has sent it: request_finished
    return response


@contextmanager
def _raw_statements():
    """Every statement sent on a psycopg cursor, Django's or not (its health check bypasses it)."""
    sent: list[str] = []
    execute = psycopg.Cursor.execute

    def recording(self, query, *args, **kwargs):
        sent.append(query if isinstance(query, str) else repr(query))
        return execute(self, query, *args, **kwargs)

    psycopg.Cursor.execute = recording
    try:
        yield sent
    finally:
        psycopg.Cursor.execute = execute


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_an_authenticated_get_sends_no_health_check_query(application):
    token = mint_token(application=application)
    assert _serve("/api/public/organizers", token).status_code == 200  # connected, token cached
    with _raw_statements() as sent:
        assert _serve("/api/public/organizers", token).status_code == 200
    assert sent and not any(query.strip().upper() == "SELECT 1" for query in sent), sent


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_connection_the_server_dropped_is_one_503_then_the_next_request_reconnects(application):
    """A restart (or failover) ends the server side of every pooled connection between requests."""
    token = mint_token(application=application)
    assert _serve("/api/public/organizers", token).status_code == 200
    pid = connection.connection.info.backend_pid
    with psycopg.connect(**connection.get_connection_params(), autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [pid])
        deadline = time.monotonic() + 10
        while admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone():
            assert time.monotonic() < deadline, "the backend did not end"
            time.sleep(0.05)

    dropped = _serve("/api/public/organizers", token)
    assert (dropped.status_code, json.loads(dropped.content)) == (503, UNAVAILABLE)
    assert dropped["Retry-After"] == "5"
    assert connection.connection is None  # closed at the end of that request, not reused
    assert _serve("/api/public/organizers", token).status_code == 200
    assert connection.connection.info.backend_pid != pid
