"""The event page's signing keys (CONTRACT §14): rotated by an action, retired by a tick, by the
organizer's owners and admins only; the signed codes setting is on the page."""

import pytest
from django.urls import reverse

from events.models import EventSigningKey
from tests.admin.helpers import change_form_data, messages_of
from tests.factories import EventFactory

pytestmark = pytest.mark.django_db


def _keys(event) -> list[tuple[str, bool]]:
    return [
        (key.key_id, key.retired_at is None)
        for key in EventSigningKey.objects.filter(event=event).order_by("id")
    ]


def test_rotate_action_makes_a_new_active_key(admin_client_a, organizer):
    event = EventFactory(organizer=organizer)
    [(old, _)] = _keys(event)

    response = admin_client_a.post(
        reverse("admin:events_event_changelist"),
        {"action": "rotate_signing_key", "_selected_action": [event.pk], "index": 0},
        follow=True,
    )

    assert messages_of(response) == ["Rotated the signing key of 1 event."]
    keys = _keys(event)
    assert keys[0] == (old, True) and len(keys) == 2 and keys[1][1] and keys[1][0] != old


def test_retire_by_a_tick_on_the_event_page(admin_client_a, organizer):
    event = EventFactory(organizer=organizer)
    [(old, _)] = _keys(event)
    url = reverse("admin:events_event_change", args=[event.pk])
    page = admin_client_a.get(url)
    assert b"signed_codes" in page.content
    data = change_form_data(page)
    data["signing_keys-0-retire"] = "on"

    response = admin_client_a.post(url, data, follow=True)

    assert f"Retired signing key {old}." in messages_of(response)
    keys = _keys(event)  # retiring the active key made a new one
    assert keys[0] == (old, False) and len(keys) == 2 and keys[1][1]


def test_staff_cannot_retire_or_rotate(staff_client, organizer):
    event = EventFactory(organizer=organizer)
    url = reverse("admin:events_event_change", args=[event.pk])
    page = staff_client.get(url)
    assert b"signing_keys-0-retire" not in page.content  # the inline is read-only

    staff_client.post(
        reverse("admin:events_event_changelist"),
        {"action": "rotate_signing_key", "_selected_action": [event.pk], "index": 0},
    )

    assert len(_keys(event)) == 1
