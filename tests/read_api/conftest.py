"""Fixtures of the read API tests: the paths they call."""

import pytest


@pytest.fixture
def events_url(organizer):
    return f"/api/public/organizers/{organizer.id}/events"


@pytest.fixture
def tickets_url(organizer, event):
    return f"/api/public/organizers/{organizer.id}/events/{event.id}/tickets"
