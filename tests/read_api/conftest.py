"""Helpers for the read API tests: paths, and setting timestamps that `auto_now` would overwrite."""

import pytest

from tickets.models import Ticket


@pytest.fixture
def events_url(organizer):
    return f"/api/public/organizers/{organizer.id}/events"


@pytest.fixture
def tickets_url(organizer, event):
    return f"/api/public/organizers/{organizer.id}/events/{event.id}/tickets"


def set_times(model, pk, **times):
    """`auto_now` fields can only be set by an UPDATE that bypasses `save()`."""
    model.objects.filter(pk=pk).update(**times)


def ids(response, key="tickets"):
    assert response.status_code == 200, response.content
    return [item["id"] for item in response.json()[key]]


def ticket_ids(queryset=None):
    return list((queryset or Ticket.objects.all()).order_by("id").values_list("id", flat=True))
