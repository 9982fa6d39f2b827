"""The check-in page's verifier of signed codes (`signed_codes.js`, CONTRACT §14) run outside a
browser, in Node.js (its WebCrypto has Ed25519 too), against codes and keys made by the service:
a code verifies with the key the sync feed lists for it, and only with that; forged, swapped,
another event's or organizer's codes, and a retired key's, do not."""

import json
import shutil
import subprocess

import pytest
from django.contrib.staticfiles import finders

from events.signing_keys import event_signing_key_retire, signing_keys_published
from tests.factories import EventFactory, TicketFactory
from tests.staff.driving import forged_code, swapped_code
from tickets.signed_codes import ticket_qr_data

NODE = shutil.which("node")
pytestmark = [pytest.mark.django_db, pytest.mark.node]

# Loads the page's script as the page does (it defines window.checkinSigned), then answers each
# case: the verified payload's ticket id or null, and the reference code the copy looks up.
HARNESS = """
globalThis.window = globalThis;
require(process.argv[1]);
const cases = JSON.parse(require("fs").readFileSync(0, "utf8"));
Promise.all(cases.map(c => window.checkinSigned.verify(c.code, c.keys, c.event).then(p => ({
    verified: p && p.t, reference_code: window.checkinSigned.referenceCode(c.code)}))))
  .then(r => process.stdout.write(JSON.stringify(r)));
"""


def _run(cases):
    script = finders.find("checkin_page/signed_codes.js")
    done = subprocess.run(
        [NODE, "-e", HARNESS, script],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout)


def test_signed_codes_verify_with_the_feeds_key_and_nothing_else(organizer):
    event = EventFactory(organizer=organizer, signed_codes=True)
    ticket = TicketFactory(event=event, reference_code="LATE0001")
    other = TicketFactory(event=event, reference_code="EARLY001")
    stranger = TicketFactory(
        event=EventFactory(organizer=organizer, signed_codes=True), reference_code="OTHER001"
    )
    code, keys = ticket_qr_data(ticket), signing_keys_published(event_id=event.pk)
    this = {"id": event.pk, "organizer_id": organizer.pk}
    cases = [
        {"code": code, "keys": keys, "event": this},
        {"code": forged_code(code), "keys": keys, "event": this},
        {"code": swapped_code(code, ticket_qr_data(other)), "keys": keys, "event": this},
        {"code": ticket_qr_data(stranger), "keys": keys, "event": this},
        {"code": code, "keys": keys, "event": {**this, "organizer_id": organizer.pk + 1}},
        {"code": code, "keys": [], "event": this},
        {"code": "T1.e30." + "A" * 86, "keys": keys, "event": this},
        {"code": "T1.not-a-code", "keys": keys, "event": this},
        {"code": "late0001", "keys": keys, "event": this},
    ]

    assert _run(cases) == [
        {"verified": ticket.pk, "reference_code": "LATE0001"},
        {"verified": None, "reference_code": "LATE0001"},  # the copy may still know it
        {"verified": None, "reference_code": "LATE0001"},
        {"verified": None, "reference_code": "OTHER001"},
        {"verified": None, "reference_code": "LATE0001"},
        {"verified": None, "reference_code": "LATE0001"},
        {"verified": None, "reference_code": ""},
        {"verified": None, "reference_code": ""},
        {"verified": None, "reference_code": "late0001"},  # a printed code, as typed
    ]


def test_signed_codes_of_a_retired_key_do_not_verify_with_the_feeds_keys(organizer):
    event = EventFactory(organizer=organizer, signed_codes=True)
    ticket = TicketFactory(event=event, reference_code="ROTATE01")
    old_code = ticket_qr_data(ticket)
    (old_key,) = signing_keys_published(event_id=event.pk)
    event_signing_key_retire(event_id=event.pk, key_id=old_key["key_id"])
    keys = signing_keys_published(event_id=event.pk)
    this = {"id": event.pk, "organizer_id": organizer.pk}

    verified = _run(
        [
            {"code": old_code, "keys": keys, "event": this},
            {"code": ticket_qr_data(ticket), "keys": keys, "event": this},
        ]
    )

    assert old_key["key_id"] not in [k["key_id"] for k in keys] and len(keys) == 1
    assert [v["verified"] for v in verified] == [None, ticket.pk]
