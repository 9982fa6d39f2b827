from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from events.models import Event
from tests.factories import EventFactory


@pytest.mark.django_db
def test_end_events_marks_past_active_events_ended_and_is_idempotent(organizer):
    now = timezone.now()
    past = EventFactory(
        organizer=organizer, start_at=now - timedelta(days=1), end_at=now - timedelta(minutes=1)
    )
    future = EventFactory(organizer=organizer)
    out = StringIO()

    call_command("end_events", stdout=out)
    call_command("end_events", stdout=out)

    assert out.getvalue().splitlines() == ["Ended 1 event.", "Ended 0 events."]
    assert dict(Event.objects.values_list("pk", "status")) == {
        past.pk: "ended",
        future.pk: "active",
    }
