"""Ticket emails: a mail server that never answers cannot hold a request (issue 11), and with
DEBUG off they must be delivered, not printed to the logs (issue 12)."""

import socket
import threading
import time

import pytest
from django.core.checks import run_checks

from tests.support import TokenClient, mint_token
from tests.task_support import run_due_tasks, scheduled_tasks
from ticketing.checks import email_is_delivered
from tickets.models import Ticket

MARGIN = 2.0  # seconds beyond EMAIL_TIMEOUT for the rest of the request on a busy machine


@pytest.fixture
def silent_mail_server():
    """A TCP server on loopback that accepts connections and never sends a byte."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    accepted: list[socket.socket] = []
    done = threading.Event()

    def accept_forever():
        while not done.is_set():
            try:
                accepted.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept_forever, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], accepted
    finally:
        done.set()
        thread.join(timeout=5)
        for connection in accepted:
            connection.close()
        listener.close()


@pytest.mark.django_db(transaction=True)  # the email task is recorded by the creation's commit
def test_a_mail_server_that_never_answers_costs_the_request_nothing_and_the_task_the_timeout(
    settings, silent_mail_server, application, member, event, ticket_type
):
    port, accepted = silent_mail_server
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", port, 1
    client = TokenClient(mint_token(application=application, user=member, scope="public organizer"))

    response = client.post(
        f"/api/public/organizers/{event.organizer_id}/events/{event.id}/tickets",
        {"ticket_type_id": ticket_type.id, "firstname": "Somsak", "lastname": "Jaidee",
         "email": "somsak@example.com", "phone": "0812345678"},
    )  # fmt: skip
    assert response.status_code == 200, response.content
    assert Ticket.objects.get().email == "somsak@example.com"
    assert accepted == []  # the request never talked to the mail server

    started = time.monotonic()
    assert run_due_tasks(name_contains="ticket_email") == 1
    assert time.monotonic() - started < settings.EMAIL_TIMEOUT + MARGIN
    assert len(accepted) == 1  # the worker did try, and gave up at the timeout
    (retry,) = scheduled_tasks(name_contains="ticket_email")  # and will try again later
    assert retry.args_kwargs["args"][0] == Ticket.objects.get().pk


@pytest.mark.parametrize(
    "backend, fate",
    [
        ("django.core.mail.backends.console.EmailBackend", "written to the logs"),
        ("django.core.mail.backends.locmem.EmailBackend", "kept in memory and lost"),
        ("django.core.mail.backends.dummy.EmailBackend", "dropped"),
    ],
)
def test_check_refuses_a_backend_that_delivers_nothing_with_debug_off(settings, backend, fate):
    settings.DEBUG, settings.EMAIL_BACKEND = False, backend
    settings.SILENCED_SYSTEM_CHECKS = []
    (error,) = [e for e in run_checks() if e.id == "ticketing.E001"]
    assert error.is_serious()
    assert error.msg == (
        f"EMAIL_BACKEND is {backend} with DEBUG off: ticket emails, whose reference codes admit "
        f"their holder, would be {fate} instead of sent."
    )
    assert "smtp.EmailBackend" in error.hint


@pytest.mark.parametrize(
    "debug, backend",
    [
        (False, "django.core.mail.backends.smtp.EmailBackend"),
        (False, "django.core.mail.backends.filebased.EmailBackend"),
        (True, "django.core.mail.backends.console.EmailBackend"),
    ],
)
def test_check_accepts_delivering_backends_and_the_console_in_development(settings, debug, backend):
    settings.DEBUG, settings.EMAIL_BACKEND = debug, backend
    assert email_is_delivered(None) == []
