"""`import_tickets` writes in batches: a few statements per batch, not per row, with the same
outcomes as one `ticket_create` per row (replays within a file, webhooks, races)."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.factories import TicketFactory, TicketTypeFactory, WebhookEndpointFactory
from tickets.models import Ticket
from tickets.services import importing
from webhooks.models import WebhookEvent

HEADER = "firstname,lastname,email,phone,ticket_type,external_id,reference_code\n"


def _run(event, tmp_path, text, *args):
    path = tmp_path / "tickets.csv"
    path.write_text(HEADER + text)
    out = StringIO()
    try:
        call_command("import_tickets", str(event.pk), str(path), *args, stdout=out, stderr=out)
    except Exception as exc:  # the command's CommandError, read by the test
        return out.getvalue(), str(exc)
    return out.getvalue(), None


def _rows(count, type_name, start=0):
    return "".join(
        f"G{i},Jaidee,g{i}@example.com,0812345678,{type_name},ext-{i},\n"
        for i in range(start, start + count)
    )


@pytest.mark.django_db
def test_a_batch_costs_the_same_statements_at_4_and_40_rows(tmp_path, event):
    regular = TicketTypeFactory(event=event, name="Regular", quantity=1000)
    vip = TicketTypeFactory(event=event, name="VIP", quantity=1000)

    def statements(count, start):
        text = _rows(count, "Regular", start) + _rows(count, "VIP", start + count)
        with CaptureQueriesContext(connection) as queries:
            _, error = _run(event, tmp_path, text)
        assert error is None
        return [q["sql"] for q in queries.captured_queries]

    statements(1, 5000)  # the first run also reads the organizer's webhook subscriptions
    small, large = statements(2, 0), statements(20, 1000)

    assert len(small) == len(large)
    updates = [sql for sql in large if sql.startswith('UPDATE "events_tickettype"')]
    assert len(updates) == 2  # one capacity claim per ticket type per batch
    regular.refresh_from_db()
    vip.refresh_from_db()
    assert (regular.sold_count, vip.sold_count) == (23, 23)
    assert Ticket.objects.filter(event=event).count() == 46


@pytest.mark.django_db
def test_a_repeated_external_id_in_one_file_is_a_replay_or_a_conflict(tmp_path, event):
    TicketTypeFactory(event=event, name="Regular", quantity=10)
    text = (
        "A,One,a@example.com,0812345678,Regular,same,\n"
        "A,One,a@example.com,0812345678,Regular,same,\n"
        "A,Other,a@example.com,0812345678,Regular,same,\n"
    )

    out, error = _run(event, tmp_path, text)

    ticket = Ticket.objects.get(event=event)
    assert error == "1 row rejected (listed above with their line numbers)."
    assert out.splitlines()[0] == (
        f"line 4: Ticket {ticket.reference_code} already has this external_id, with other details."
    )
    assert "  tickets created: 1" in out
    assert "  already imported (same external_id): 1" in out


@pytest.mark.django_db
def test_quota_overflow_in_a_batch_serves_the_earlier_lines(tmp_path, event):
    vip = TicketTypeFactory(event=event, name="VIP", quantity=3)
    TicketFactory(event=event, ticket_type=vip)  # one place taken already
    vip.sold_count = 1
    vip.save()

    out, _ = _run(event, tmp_path, _rows(4, "VIP"))

    assert out.splitlines()[:2] == [
        "line 4: Ticket type 'VIP' has no places left.",
        "line 5: Ticket type 'VIP' has no places left.",
    ]
    assert sorted(
        Ticket.objects.filter(event=event, external_id__isnull=False).values_list(
            "external_id", flat=True
        )
    ) == ["ext-0", "ext-1"]
    vip.refresh_from_db()
    assert vip.sold_count == 3


@pytest.mark.django_db
def test_a_dry_run_counts_places_across_batches_without_locking_the_ticket_type(
    tmp_path, event, monkeypatch
):
    """A preview reads the whole file in one rolled-back transaction: claiming places would
    keep the ticket type locked against sales all that time."""
    monkeypatch.setattr("tickets.management.commands.import_tickets.IMPORT_BATCH_ROWS", 2)
    vip = TicketTypeFactory(event=event, name="VIP", quantity=4, sold_count=1)

    with CaptureQueriesContext(connection) as captured:
        out, error = _run(event, tmp_path, _rows(5, "VIP"), "--dry-run")

    assert [line for line in out.splitlines() if line.startswith("line ")] == [
        "line 5: Ticket type 'VIP' has no places left.",
        "line 6: Ticket type 'VIP' has no places left.",
    ]
    assert "2 rows rejected" in error
    assert not [q for q in captured.captured_queries if 'UPDATE "events_tickettype"' in q["sql"]]
    assert not [q for q in captured.captured_queries if "FOR UPDATE" in q["sql"]]
    vip.refresh_from_db()
    assert vip.sold_count == 1 and not Ticket.objects.filter(external_id__isnull=False).exists()


@pytest.mark.django_db
def test_each_imported_ticket_records_its_webhook_event(tmp_path, event):
    TicketTypeFactory(event=event, name="Regular", quantity=10)
    WebhookEndpointFactory(organizer=event.organizer, event_types=["ticket.created"])

    _run(event, tmp_path, _rows(3, "Regular"))

    events = WebhookEvent.objects.filter(type="ticket.created")
    assert sorted(e.payload["data"]["ticket"]["external_id"] for e in events) == [
        "ext-0",
        "ext-1",
        "ext-2",
    ]


@pytest.mark.django_db
def test_a_race_on_the_batch_insert_falls_back_to_one_row_at_a_time(tmp_path, event, monkeypatch):
    regular = TicketTypeFactory(event=event, name="Regular", quantity=10)
    original = importing.TicketImporter._chosen_codes_checked

    def checked_then_raced(self, candidates):
        # A concurrent API call takes ext-1 between the batch's checks and its insert.
        kept = original(self, candidates)
        TicketFactory(event=event, ticket_type=regular, external_id="ext-1")
        return kept

    monkeypatch.setattr(importing.TicketImporter, "_chosen_codes_checked", checked_then_raced)

    out, error = _run(event, tmp_path, _rows(3, "Regular"))

    assert error == "1 row rejected (listed above with their line numbers)."
    assert out.splitlines()[0].startswith("line 3: Ticket ")
    assert out.splitlines()[0].endswith("already has this external_id, with other details.")
    assert sorted(Ticket.objects.filter(event=event).values_list("external_id", flat=True)) == [
        "ext-0",
        "ext-1",
        "ext-2",
    ]
    regular.refresh_from_db()
    assert regular.sold_count == 3  # the racer and two rows: the batch claim was undone


class _Terminal(StringIO):
    def isatty(self):
        return True


@pytest.mark.django_db
def test_on_a_terminal_the_progress_is_a_tqdm_bar(tmp_path, event):
    TicketTypeFactory(event=event, name="Regular", quantity=10)
    path = tmp_path / "tickets.csv"
    path.write_text(HEADER + _rows(3, "Regular"))
    out, err = StringIO(), _Terminal()

    call_command("import_tickets", str(event.pk), str(path), stdout=out, stderr=err)

    bar = err.getvalue()
    assert "\r" in bar and "3/3" in bar and "100%" in bar and "rows" in bar
    assert "  tickets created: 3" in out.getvalue()
