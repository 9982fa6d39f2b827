"""The demo's staff user (bootstrap_demo) can use the admin for organizer 1, and only it."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client, override_settings
from django.urls import reverse


@pytest.mark.django_db
def test_demo_staff_logs_in_and_sees_only_organizer_1(django_capture_on_commit_callbacks):
    out = StringIO()
    with django_capture_on_commit_callbacks(execute=True), override_settings(DEBUG=True):
        call_command("bootstrap_demo", "--json", stdout=out)  # as `make run` does
    demo = json.loads(out.getvalue())
    staff = demo["users"]["staff"]
    client = Client()

    assert client.login(username=staff["username"], password=staff["password"])
    own = client.get(reverse("admin:events_event_change", args=[demo["events"]["simple"]]))
    other = client.get(
        reverse("admin:events_event_change", args=[demo["events"]["other_organizer"]])
    )
    tickets = client.get(
        reverse("admin:tickets_ticket_changelist"), {"event_id": demo["events"]["simple"]}
    )

    assert own.status_code == 200
    assert own.context["has_change_permission"] is True  # role admin in organizer 1
    assert other.status_code == 404
    assert tickets.status_code == 200
    assert len(tickets.context["cl"].result_list) >= 30
