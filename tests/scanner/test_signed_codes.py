"""Signed ticket codes (CONTRACT §14, §11 keys): the test reads codes as a partner's scanner does,
from the QR image and the sync feed's keys, and verifies them with `cryptography` itself."""

import base64
import json
import re
from datetime import timedelta

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from events import signing_keys
from events.models import Event, EventSigningKey
from events.signing_keys import (
    event_signing_key_retire,
    event_signing_key_rotate,
    signing_key_active,
)
from tests.attendee.helpers import qr_decode
from tests.factories import EventFactory, TicketFactory, TicketTypeFactory
from tickets.links import ticket_page_path
from tickets.models import Ticket

from .helpers import batch_url, event_url, sync_page


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def qr_code(client, ticket) -> str:
    """What the ticket's QR image (the attendee's page) carries."""
    [code] = qr_decode(client.get(f"{ticket_page_path(ticket)}/qr.png").content)
    return code


def scan(client, event, code: str):
    return client.post(f"{event_url(event)}/tickets/checkin", {"reference_code": code})


def search(client, event, code: str):
    return client.get(f"{event_url(event)}/tickets/search", {"reference_code": code})


def batch(client, event, code: str) -> dict:
    body = {"scans": [{"id": "scan-0001", "reference_code": code, "used_at": _now()}]}
    response = client.post(batch_url(event), body, format="json")
    assert response.status_code == 200, response.json()
    return response.json()["results"][0]


def _now() -> str:
    return timezone.now().isoformat()


def assert_not_found(response):
    assert response.status_code == 404, response.content
    assert response.json()["error"] == "not_found"


@pytest.fixture
def ticket(event, ticket_type):
    return TicketFactory(event=event, ticket_type=ticket_type, reference_code="ABCD2345")


@pytest.fixture
def other_ticket(event, ticket_type):
    return TicketFactory(event=event, ticket_type=ticket_type, reference_code="WXYZ6789")


def test_signed_code_verifies_with_the_feed_key(client, event, ticket):
    code = qr_code(client, ticket)
    keys = sync_page(client, event)["keys"]

    prefix, payload, signature = code.split(".")
    assert prefix == "T1"
    data = json.loads(unb64(payload))
    assert data == {
        "o": event.organizer_id,
        "e": event.id,
        "t": ticket.id,
        "y": ticket.ticket_type_id,
        "c": "ABCD2345",
        "k": data["k"],
    }
    [key] = keys
    assert key == {
        "key_id": data["k"],
        "algorithm": "Ed25519",
        "public_key": key["public_key"],
        "active": True,
    }
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", key["public_key"])  # 32 bytes, no padding
    public_key = Ed25519PublicKey.from_public_bytes(unb64(key["public_key"]))
    public_key.verify(unb64(signature), f"T1.{payload}".encode("ascii"))  # raises if not

    response = scan(client, event, code)
    assert response.status_code == 200, response.json()
    assert response.json()["ticket"]["id"] == ticket.id


def _forgeries(code: str, other_code: str) -> dict[str, str]:
    prefix, payload, signature = code.split(".")
    data = json.loads(unb64(payload))
    flipped = ("A" if signature[0] != "A" else "B") + signature[1:]
    edited = b64(json.dumps({**data, "c": "WXYZ6789"}, separators=(",", ":")).encode())
    return {
        "forged signature": f"{prefix}.{payload}.{flipped}",
        "another ticket's payload": f"{prefix}.{other_code.split('.')[1]}.{signature}",
        "edited payload": f"{prefix}.{edited}.{signature}",
        "signed by another key": other_code.rsplit(".", 1)[0] + "." + b64(bytes(64)),
    }


def test_forged_or_swapped_codes_are_unknown_codes(client, event, ticket, other_ticket):
    code, other = qr_code(client, ticket), qr_code(client, other_ticket)

    for name, forged in _forgeries(code, other).items():
        assert_not_found(scan(client, event, forged))
        assert_not_found(search(client, event, forged))
        assert batch(client, event, forged)["error"] == "not_found", name
        client.post(f"{event_url(event)}/tickets/renew", {"reference_code": forged})
    assert Ticket.objects.get(pk=ticket.pk).status == Ticket.Status.ACTIVE
    assert Ticket.objects.get(pk=other_ticket.pk).status == Ticket.Status.ACTIVE


@pytest.mark.parametrize(
    "garbage",
    [
        "T1.",
        "T1..",
        "T1.!!!.???",
        "T1.e30.AAAA",  # `{}` signed by nothing
        "T1." + b64(b"[1,2]") + "." + "A" * 86,
        "T1." + b64(b'{"o":1,"e":1,"t":99999999999,"y":1,"c":"X","k":"x"}') + "." + "A" * 86,
        "T1." + b64(b"\xff\xfe") + "." + "A" * 86,
        "T1.AAAAA." + "A" * 86,  # not a base64 length
        "T1." + "A" * 290,
    ],
)
def test_garbage_after_the_prefix_is_an_unknown_code(client, event, ticket, garbage):
    assert_not_found(scan(client, event, garbage))
    assert_not_found(search(client, event, garbage))
    assert batch(client, event, garbage)["error"] == "not_found"


def test_huge_input_is_a_400(client, event):
    response = scan(client, event, "T1." + "A" * 5000)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_parameters"


def test_a_code_of_another_event_is_an_unknown_code(client, organizer, event, ticket):
    other_event = EventFactory(organizer=organizer)
    other = TicketFactory(event=other_event, ticket_type=TicketTypeFactory(event=other_event))
    code = qr_code(client, other)

    assert_not_found(scan(client, event, code))
    assert_not_found(search(client, event, code))
    assert batch(client, event, code)["error"] == "not_found"
    assert scan(client, other_event, code).status_code == 200


def test_a_retired_keys_codes_are_unknown_and_it_leaves_the_feed(client, event, ticket):
    code = qr_code(client, ticket)
    key_id = json.loads(unb64(code.split(".")[1]))["k"]
    assert search(client, event, code).status_code == 200  # read once: now in the key cache

    event_signing_key_retire(event_id=event.id, key_id=key_id)

    assert_not_found(search(client, event, code))
    assert_not_found(scan(client, event, code))
    assert batch(client, event, code)["error"] == "not_found"
    keys = sync_page(client, event)["keys"]
    assert [k["key_id"] for k in keys] != [key_id] and key_id not in {k["key_id"] for k in keys}
    assert [k["active"] for k in keys] == [True]  # retiring the active key made another
    new_code = qr_code(client, ticket)
    assert json.loads(unb64(new_code.split(".")[1]))["k"] == keys[0]["key_id"]
    assert scan(client, event, new_code).status_code == 200


def test_rotation_keeps_old_codes_valid_and_signs_new_ones_with_the_new_key(
    client, event, ticket, other_ticket
):
    old_code = qr_code(client, ticket)
    old_key = json.loads(unb64(old_code.split(".")[1]))["k"]

    new_key = event_signing_key_rotate(event_id=event.id).key_id

    new_code = qr_code(client, other_ticket)
    assert json.loads(unb64(new_code.split(".")[1]))["k"] == new_key
    keys = {k["key_id"]: k["active"] for k in sync_page(client, event)["keys"]}
    assert keys == {new_key: True, old_key: False}
    assert scan(client, event, old_code).status_code == 200
    assert scan(client, event, new_code).status_code == 200


def test_search_and_batch_take_the_signed_code(client, event, ticket):
    code = qr_code(client, ticket)

    response = search(client, event, f"  {code} ")
    assert response.status_code == 200
    assert response.json()["ticket"]["id"] == ticket.id
    result = batch(client, event, code)
    assert (result["success"], result["ticket"]["id"]) == (True, ticket.id)
    assert Ticket.objects.get(pk=ticket.pk).status == Ticket.Status.USED
    renewed = client.post(f"{event_url(event)}/tickets/renew", {"reference_code": code})
    assert renewed.status_code == 200
    assert search(client, event, "abcd2345").status_code == 200  # the printed code still works


def test_a_code_signed_before_its_ticket_changed_reference_code_is_unknown(client, event, ticket):
    code = qr_code(client, ticket)
    Ticket.objects.filter(pk=ticket.pk).update(reference_code="NEWC0DE2")

    assert_not_found(scan(client, event, code))
    assert_not_found(search(client, event, code))
    assert batch(client, event, code)["error"] == "not_found"


def test_events_with_signed_codes_off_serve_the_reference_code(client, event, ticket):
    Event.objects.filter(pk=event.pk).update(signed_codes=False)

    assert qr_code(client, ticket) == "ABCD2345"
    assert scan(client, event, "ABCD2345").status_code == 200


def test_an_event_without_a_key_gets_one_when_a_code_is_first_signed(client, organizer):
    start = timezone.now() + timedelta(days=1)
    event = Event.objects.create(  # as an event made before signed codes, then turned on
        organizer=organizer, title="Older", status="active", start_at=start, end_at=start
    )
    ticket = TicketFactory(event=event, ticket_type=TicketTypeFactory(event=event))
    assert not EventSigningKey.objects.filter(event=event).exists()

    code = qr_code(client, ticket)

    assert EventSigningKey.objects.filter(event=event).count() == 1
    assert scan(client, event, code).status_code == 200


def test_private_key_is_not_readable_in_plaintext_from_the_database(event):
    private = signing_key_active(event_id=event.id).private_key.private_bytes_raw()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {EventSigningKey._meta.db_table}")
        stored = repr(cursor.fetchall())

    for form in (private, private.hex().encode(), base64.b64encode(private), b64(private).encode()):
        assert form.decode("latin-1") not in stored


def test_the_command_lists_rotates_and_retires(capsys, event):
    call_command("event_signing_keys", "--event", str(event.id), "--rotate")
    out = capsys.readouterr().out
    new_key = re.search(r"New active key (\S+)\.", out).group(1)
    old_key = EventSigningKey.objects.filter(event=event).exclude(key_id=new_key).get().key_id

    call_command("event_signing_keys", "--event", str(event.id), "--retire", old_key)
    out = capsys.readouterr().out

    assert f"{new_key}\tactive" in out and f"{old_key}\tretired" in out


def test_key_ids_are_letters_and_digits_so_a_command_line_never_reads_one_as_an_option():
    # token_urlsafe drew ids such as "-x3Kq9aB", which `--retire -x3Kq9aB` cannot name.
    key_ids = {signing_keys._key_id() for _ in range(500)}

    assert len(key_ids) == 500
    assert all(re.fullmatch(r"[A-Za-z0-9]{8}", key_id) for key_id in key_ids)


def test_the_guides_python_example_verifies_a_real_code(client, event, ticket):
    description = client.get("/api/public/schema/?format=json").json()["info"]["description"]
    [example] = re.findall(r"```python\n(.*?)```", description, re.S)
    namespace: dict = {}
    exec(example, namespace)  # the partner's code, as published
    verify = namespace["signed_code_verify"]
    code, keys = qr_code(client, ticket), sync_page(client, event)["keys"]

    assert verify(code, keys, event.organizer_id, event.id)["t"] == ticket.id
    assert verify(code, keys, event.organizer_id, event.id + 1) is None
    forged = code[:-20] + ("A" if code[-20] != "A" else "B") + code[-19:]
    assert verify(forged, keys, event.organizer_id, event.id) is None
    assert verify("T1.!.!", keys, event.organizer_id, event.id) is None


@pytest.mark.django_db(transaction=True)
def test_the_migration_leaves_existing_events_off(organizer):
    before = [("events", "0004_translatable_verbose_names")]
    after = [("events", "0006_signing_key_names")]
    executor = MigrationExecutor(connection)
    try:
        executor.migrate(before)
        old = executor.loader.project_state(before).apps.get_model("events", "Event")
        existing = old.objects.create(
            organizer_id=organizer.pk, title="Old", start_at=timezone.now(), end_at=timezone.now()
        )
    finally:
        MigrationExecutor(connection).migrate(after)

    assert Event.objects.get(pk=existing.pk).signed_codes is False
    new = Event.objects.create(
        organizer=organizer, title="New", start_at=timezone.now(), end_at=timezone.now()
    )
    assert new.signed_codes is True
