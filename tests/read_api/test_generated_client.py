"""A Python client generated from the served document (openapi-python-client) is code that
imports and calls the API as the document says: a shape the generator cannot turn into working
code is a bug of the document, whatever the server accepts."""

import importlib
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from organizers.models import Membership
from tests.factories import MembershipFactory, TicketFactory, UserFactory
from tests.support import live_site, mint_token
from tickets.models import Ticket
from webhooks.models import WebhookEndpoint, WebhookEvent
from webhooks.outbox import webhook_events_complete
from webhooks.secrets import secret_decrypt

PACKAGE = "ticketing_generated_client"
PUBLIC_URL = "https://93.184.215.14/hooks"  # a public address: no DNS, and nothing is delivered


@pytest.fixture(scope="module")
def document(django_db_blocker) -> dict:
    with django_db_blocker.unblock():
        response = APIClient().get("/api/public/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    return json.loads(response.content)


@pytest.fixture(scope="module")
def generated(document, tmp_path_factory):
    """The client package generated from `document`, importable for this module's tests."""
    where = tmp_path_factory.mktemp("generated")
    (where / "openapi.json").write_text(json.dumps(document))
    command = [sys.executable, "-m", "openapi_python_client", "generate", "--fail-on-warning"]
    command += ["--path", str(where / "openapi.json"), "--output-path", str(where / PACKAGE)]
    tools = str(Path(sys.executable).parent)  # the generator formats its output with ruff
    run = subprocess.run(
        [*command, "--meta", "none"],
        env={**os.environ, "PATH": tools + os.pathsep + os.environ.get("PATH", "")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    sys.path.insert(0, str(where))
    yield importlib.import_module(PACKAGE)
    sys.path.remove(str(where))
    for name in [n for n in sys.modules if n.partition(".")[0] == PACKAGE]:
        del sys.modules[name]


def _module(name: str):
    return importlib.import_module(f"{PACKAGE}.{name}")


def test_generated_client_imports_every_module(generated):
    failures = {}
    for module in pkgutil.walk_packages(generated.__path__, f"{PACKAGE}."):
        try:
            importlib.import_module(module.name)
        except Exception as exc:  # any error: the module is unusable
            failures[module.name] = repr(exc)
    assert failures == {}


def test_generated_client_has_a_function_per_operation(generated, document):
    operations = {
        operation["operationId"]
        for item in document["paths"].values()
        for method, operation in item.items()
        if method in ("get", "post", "put", "patch", "delete")
    }
    api = Path(generated.__file__).parent / "api"
    modules = {path.stem for path in api.glob("*/*.py") if path.stem != "__init__"}
    assert modules == operations


@pytest.fixture
def site(transactional_db):
    yield from live_site(range(8641, 8660))


def test_generated_client_registers_a_webhook_and_scans_a_ticket(
    generated, site, organizer, application, event, ticket_type
):
    owner = UserFactory(username="owner")
    MembershipFactory(user=owner, organizer=organizer, role=Membership.Role.OWNER)
    user_token = mint_token(application=application, user=owner, scope="public organizer")
    app_token = mint_token(application=application, scope="public")
    ticket = TicketFactory(event=event, ticket_type=ticket_type, reference_code="GATE2345")
    models = _module("models")
    register = _module("api.webhooks.organizers_webhooks_create")
    scan = _module("api.check_in.organizers_events_tickets_scan_checkin_create")

    # Each client closes its connection before the server stops: the server's thread for a
    # connection still open would outlive the test database it shares.
    with generated.AuthenticatedClient(base_url=site, token=user_token) as client:
        created = register.sync_detailed(
            organizer_id=organizer.id,
            client=client,
            body=models.WebhooksInputRequest(
                url=PUBLIC_URL, event_types=[models.EventTypesEnum.TICKET_CHECKED_IN]
            ),
        )

    assert created.status_code == 201, created.content
    webhook = created.parsed.webhook
    assert (webhook.url, webhook.event_types, webhook.is_active) == (
        PUBLIC_URL,
        [models.EventTypesEnum.TICKET_CHECKED_IN],
        True,
    )
    endpoint = WebhookEndpoint.objects.get(pk=webhook.id, organizer=organizer)
    assert endpoint.event_types == ["ticket.checked_in"]
    assert secret_decrypt(endpoint.secret_encrypted) == webhook.secret

    with generated.AuthenticatedClient(base_url=site, token=app_token) as client:
        scanned = scan.sync_detailed(
            organizer_id=organizer.id,
            event_id=event.id,
            client=client,
            body=models.ScanCheckInInputRequest(reference_code=" gate2345 "),
        )

    assert scanned.status_code == 200, scanned.content
    result = scanned.parsed
    assert isinstance(result, models.GateResult)
    assert (result.success, result.check_in_results, result.renew_results) == (True, [], [])
    assert (result.ticket.id, result.ticket.reference_code) == (ticket.id, "GATE2345")
    assert result.ticket.status == models.TicketStatusEnum.USED
    ticket.refresh_from_db()
    assert ticket.status == Ticket.Status.USED
    assert ticket.used_at == result.ticket.used_at
    # The endpoint registered above is told: the event as its delivery will send it.
    sent = WebhookEvent.objects.get(organizer=organizer, type=WebhookEvent.Type.TICKET_CHECKED_IN)
    (payload,) = [e.payload for e in webhook_events_complete([sent.pk])]
    assert payload["data"]["ticket"]["id"] == ticket.id
