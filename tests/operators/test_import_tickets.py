"""`import_tickets`: the same creation service as the API, row by row or all or nothing."""

import logging
from io import StringIO

import pytest
from django.core import mail
from django.core.management import CommandError, call_command

from events.models import TicketType
from tests.factories import EventFactory, TicketTypeFactory
from tests.task_support import run_due_tasks
from tickets.models import Ticket
from tickets.services.import_upload import tickets_import_file

HEADER = "firstname,lastname,email,phone,ticket_type,external_id,reference_code\n"


@pytest.fixture
def regular(event):
    return TicketTypeFactory(event=event, name="Regular", quantity=100)


@pytest.fixture
def vip(event):
    return TicketTypeFactory(event=event, name="VIP", quantity=2)


def _csv(tmp_path, text, name="tickets.csv", encoding="utf-8"):
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    return path


def _run(event, path, *args):
    out, err = StringIO(), StringIO()
    try:
        call_command("import_tickets", str(event.pk), str(path), *args, stdout=out, stderr=err)
    except CommandError as exc:
        return out.getvalue(), err.getvalue(), str(exc)
    return out.getvalue(), err.getvalue(), None


@pytest.mark.django_db
def test_import_creates_tickets_through_the_service(tmp_path, event, regular, vip):
    path = _csv(
        tmp_path,
        HEADER
        + "Somchai,Jaidee,somchai@example.com,0812345678,Regular,crm-1,\n"
        + f"Malee,Srisuk,malee@example.com,+66812345679,{vip.pk},crm-2,MALEE-001\n",
    )

    out, _, error = _run(event, path)

    assert error is None
    tickets = {t.external_id: t for t in Ticket.objects.filter(event=event)}
    assert set(tickets) == {"crm-1", "crm-2"}
    first, second = tickets["crm-1"], tickets["crm-2"]
    assert (first.ticket_type, first.phone, first.kind, first.issued_via_api) == (
        regular,
        "+66812345678",
        "external",
        False,
    )
    assert len(first.reference_code) == 8
    assert (second.ticket_type, second.reference_code) == (vip, "MALEE-001")
    assert first.order.status == "paid"
    regular.refresh_from_db()
    assert (regular.sold_count, regular.api_sold_count) == (1, 0)
    assert run_due_tasks() == 0 and mail.outbox == []  # imports send no email unless --notify
    assert out.splitlines() == [
        f"Event {event.pk} 'Songkran Beats': 2 rows.",
        "  tickets created: 2",
        "  already imported (same external_id): 0",
        "  rejected: 0",
        "Done.",
    ]


@pytest.mark.django_db
def test_rerun_is_idempotent_by_external_id(tmp_path, event, regular):
    path = _csv(tmp_path, HEADER + "Somchai,Jaidee,somchai@example.com,0812345678,Regular,crm-1,\n")
    _run(event, path)

    out, _, error = _run(event, path)

    assert error is None
    assert Ticket.objects.filter(event=event).count() == 1
    assert "  tickets created: 0" in out
    assert "  already imported (same external_id): 1" in out
    regular.refresh_from_db()
    assert regular.sold_count == 1


@pytest.mark.django_db
def test_bad_rows_are_reported_by_line_and_good_rows_saved(tmp_path, event, regular, vip):
    path = _csv(
        tmp_path,
        HEADER
        + "Ok,One,ok1@example.com,0812345678,Regular,,\n"  # line 2
        + "Bad,Mail,not-an-email,0812345678,Regular,,\n"  # line 3
        + "\n"  # line 4: blank, skipped
        + "Bad,Phone,p@example.com,123,Regular,,\n"  # line 5
        + 'Multi,"Line\nName",ml@example.com,0812345678,Nope,,\n'  # lines 6-7
        + "Short,Row,s@example.com\n"  # line 8
        + "Ok,Two,ok2@example.com,0812345678,VIP,,\n"  # line 9
        + "Ok,Three,ok3@example.com,0812345678,VIP,,\n"  # line 10
        + "Over,Quota,oq@example.com,0812345678,VIP,,\n"  # line 11
        + "Bad,Code,bc@example.com,0812345678,VIP,,a!\n",  # line 12
    )

    out, _, error = _run(event, path)

    assert error == "6 rows rejected (listed above with their line numbers)."
    assert out.splitlines() == [
        "line 3: email: Enter a valid email address.",
        "line 5: phone: Enter a valid phone number.",
        "line 6: no ticket type 'Nope' in this event",
        "line 8: 3 cells where the header has 7",
        "line 11: Ticket type 'VIP' has no places left.",
        "line 12: reference_code: Use 6 to 32 characters: letters A-Z, digits and '-'.",
        f"Event {event.pk} 'Songkran Beats': 9 rows.",
        "  tickets created: 3",
        "  already imported (same external_id): 0",
        "  rejected: 6",
        "Done.",
    ]
    assert sorted(Ticket.objects.values_list("lastname", flat=True)) == ["One", "Three", "Two"]


@pytest.mark.django_db
def test_atomic_saves_nothing_when_a_row_is_rejected(tmp_path, event, regular):
    path = _csv(
        tmp_path,
        HEADER
        + "Ok,One,ok1@example.com,0812345678,Regular,,\n"
        + "Bad,Mail,not-an-email,0812345678,Regular,,\n"
        + "Ok,Two,ok2@example.com,0812345678,Regular,,\n",
    )

    out, _, error = _run(event, path, "--atomic")

    assert error == "1 row rejected (listed above with their line numbers)."
    assert "line 3: email: Enter a valid email address." in out
    assert "--atomic: nothing was saved, because rows were rejected." in out
    assert Ticket.objects.count() == 0
    regular.refresh_from_db()
    assert regular.sold_count == 0


@pytest.mark.django_db
def test_atomic_saves_everything_when_all_rows_are_good(tmp_path, event, regular):
    path = _csv(
        tmp_path,
        HEADER
        + "Ok,One,ok1@example.com,0812345678,Regular,a,\n"
        + "Ok,Two,ok2@example.com,0812345678,Regular,b,\n",
    )

    _, _, error = _run(event, path, "--atomic")

    assert error is None
    assert Ticket.objects.filter(event=event).count() == 2


@pytest.mark.django_db
def test_dry_run_reports_and_saves_nothing(tmp_path, event, vip):
    path = _csv(
        tmp_path,
        HEADER
        + "A,One,a1@example.com,0812345678,VIP,,\n"
        + "A,Two,a2@example.com,0812345678,VIP,,\n"
        + "A,Three,a3@example.com,0812345678,VIP,,\n",
    )

    out, _, error = _run(event, path, "--dry-run")

    assert error == "1 row rejected (listed above with their line numbers)."
    assert "line 4: Ticket type 'VIP' has no places left." in out  # quotas are checked too
    assert "  tickets would be created: 2" in out
    assert "Dry run: nothing was saved." in out
    assert Ticket.objects.count() == 0
    vip.refresh_from_db()
    assert vip.sold_count == 0


@pytest.mark.django_db
def test_notify_sends_the_ticket_email_through_a_task(tmp_path, event, regular):
    path = _csv(tmp_path, HEADER + "Ok,One,ok1@example.com,0812345678,Regular,,\n")

    _run(event, path, "--notify")

    assert mail.outbox == []
    assert run_due_tasks() == 1
    assert [m.to for m in mail.outbox] == [["ok1@example.com"]]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            "firstname,lastname,email\nA,B,c@example.com\n",
            "Missing columns: phone, ticket_type. The first line must name the columns: "
            "firstname, lastname, email, phone, ticket_type (and optionally external_id, "
            "reference_code); found: firstname, lastname, email.",
        ),
        ("", "the file is empty; the first line must name the columns."),
        (
            "firstname,firstname,lastname,email,phone,ticket_type\n",
            "Columns named more than once: firstname.",
        ),
        (
            HEADER + 'A,"B,c@example.com,0812345678,Regular,,\n',
            "line 2: this is not valid CSV (unexpected end of data).",
        ),
    ],
)
def test_unreadable_csv_changes_nothing(tmp_path, event, regular, content, message):
    path = _csv(tmp_path, content)

    _, _, error = _run(event, path)

    assert error is not None and error.endswith(message)
    assert Ticket.objects.count() == 0


@pytest.mark.django_db
def test_wrong_encoding_is_reported_before_anything_is_saved(tmp_path, event, regular):
    # Good rows first: the scan must reject the file before the import saves them.
    rows = "".join(f"Ok,R{i},r{i}@example.com,0812345678,Regular,,\n" for i in range(5))
    path = _csv(
        tmp_path, HEADER + rows + "Ünal,Ça,u@example.com,0812345678,Regular,,\n", encoding="latin-1"
    )

    _, _, error = _run(event, path)

    assert error == (
        f"{path}: line 7 is not valid utf-8-sig (invalid continuation byte). "
        "Save the file as UTF-8 or pass --encoding."
    )
    assert Ticket.objects.count() == 0


@pytest.mark.django_db
def test_other_encodings_and_delimiters(tmp_path, event, regular):
    text = HEADER.replace(",", ";") + "Ünal;Çelik;u@example.com;0812345678;Regular;;\n"
    path = _csv(tmp_path, text, encoding="latin-1")

    _, _, error = _run(event, path, "--encoding", "latin-1", "--delimiter", ";")

    assert error is None
    assert Ticket.objects.get().firstname == "Ünal"


@pytest.mark.django_db
def test_utf8_bom_and_header_case_and_order_do_not_matter(tmp_path, event, regular):
    text = (
        "\ufeffTicket_Type, Email ,FirstName,LastName,Phone\nRegular,a@example.com,A,B,0812345678\n"
    )
    path = _csv(tmp_path, text)

    _, _, error = _run(event, path)

    assert error is None
    assert Ticket.objects.get().email == "a@example.com"


@pytest.mark.django_db
def test_ambiguous_ticket_type_name_and_other_events_type_id(tmp_path, event, regular):
    twin = TicketTypeFactory(event=event, name="regular")
    foreign = TicketTypeFactory(event=EventFactory(), name="Foreign")
    path = _csv(
        tmp_path,
        HEADER
        + "A,B,a@example.com,0812345678,Regular,,\n"
        + f"A,B,b@example.com,0812345678,{foreign.pk},,\n"
        + f"A,B,c@example.com,0812345678,{twin.pk},,\n"
        + "A,B,d@example.com,0812345678,\u00b2,,\n",  # a digit int() refuses
    )

    out, _, _ = _run(event, path)

    assert out.splitlines()[:3] == [
        f"line 2: ticket type name 'Regular' is ambiguous (ids {regular.pk}, {twin.pk}); "
        "use the id",
        f"line 3: no ticket type '{foreign.pk}' in this event",
        "line 5: no ticket type '\u00b2' in this event",
    ]
    assert Ticket.objects.get().ticket_type == twin


@pytest.mark.django_db
def test_conflicting_external_id_and_taken_reference_code(tmp_path, event, regular):
    path = _csv(
        tmp_path,
        HEADER
        + "A,B,a@example.com,0812345678,Regular,x-1,CODE-0001\n"
        + "A,Other,a@example.com,0812345678,Regular,x-1,\n"
        + "C,D,c@example.com,0812345678,Regular,,CODE-0001\n"
        + ("E," + "x" * 151 + ",e@example.com,0812345678,Regular,,\n"),
    )

    out, _, _ = _run(event, path)

    lines = out.splitlines()
    assert lines[0].startswith("line 3: Ticket CODE-0001 already has this external_id")
    assert lines[1] == "line 4: Reference code CODE-0001 is taken in this event."
    assert lines[2] == "line 5: lastname: longer than 150 characters"


@pytest.mark.django_db
def test_draft_event_stops_the_import(tmp_path, organizer):
    draft = EventFactory(organizer=organizer, status="draft", title="Draft")
    TicketTypeFactory(event=draft, name="Regular")
    path = _csv(tmp_path, HEADER + "A,B,a@example.com,0812345678,Regular,,\n")

    _, _, error = _run(draft, path)

    assert error == "Event 'Draft' is draft. No tickets can be issued."
    assert Ticket.objects.count() == 0


@pytest.mark.django_db
def test_unknown_event_and_missing_file(tmp_path, event):
    with pytest.raises(CommandError, match=r"Event 999999 does not exist\."):
        call_command("import_tickets", "999999", str(tmp_path / "x.csv"))
    with pytest.raises(CommandError, match="no such file"):
        call_command("import_tickets", str(event.pk), str(tmp_path / "x.csv"))


@pytest.mark.django_db
def test_progress_is_written_to_stderr(tmp_path, event, regular):
    rows = "".join(f"A,R{i},r{i}@example.com,0812345678,Regular,,\n" for i in range(20))
    path = _csv(tmp_path, HEADER + rows)

    _, err, _ = _run(event, path)

    assert err.splitlines() == [
        f"{n}/20 rows ({n * 5}%)" for n in (2, 4, 6, 8, 10, 12, 14, 16, 18, 20)
    ]
    assert TicketType.objects.get(pk=regular.pk).sold_count == 20


@pytest.mark.django_db
def test_utf16_file_with_crlf_and_quoted_newline(tmp_path, event, regular):
    """A quoted line break is read as part of its cell (and the next row's line number counts
    it); in a name it is refused, as by the API."""
    text = (
        HEADER.replace("\n", "\r\n")
        + 'Ünal,"Çelik\r\nJr",u@example.com,0812345678,Regular,,\r\n'  # lines 2-3
        + "Ünal,Çelik,u@example.com,0812345678,Regular,,\r\n"  # line 4
    )
    path = _csv(tmp_path, text, encoding="utf-16")

    out, _, error = _run(event, path, "--encoding", "utf-16")

    assert error == "1 row rejected (listed above with their line numbers)."
    assert out.splitlines()[0] == (
        "line 2: lastname: Must not contain control, invisible or text-direction characters,"
        " or line breaks."
    )
    assert Ticket.objects.get().lastname == "Çelik"


@pytest.mark.django_db
def test_control_characters_in_names_are_refused_by_line_and_field(tmp_path, event, regular):
    """A name is printed as one line of the email, the CSV export and the check-in page."""
    path = _csv(
        tmp_path,
        HEADER
        + '"Evil\r\nBcc: x@evil.example",One,e1@example.com,0812345678,Regular,,\n'  # 2-3
        + "Ok,One,ok1@example.com,0812345678,Regular,,\n"  # line 4
        + "Tab\tbed,Two,e2@example.com,0812345678,Regular,,\n"  # line 5
        + "Esc,\x1b[31mRed,e3@example.com,0812345678,Regular,,\n"  # line 6
        + "Line\u2028Sep,Three,e4@example.com,0812345678,Regular,,\n"  # line 7
        + "Next\x85Line,Four,e5@example.com,0812345678,Regular,,\n"  # line 8
        + "Nul\x00,Five,e6@example.com,0812345678,Regular,,\n"  # line 9
        + "Ok,Two,ok2@example.com,0812345678,Regular,,\n",  # line 10
    )

    out, _, error = _run(event, path)

    refused = "Must not contain control, invisible or text-direction characters, or line breaks."
    assert error == "6 rows rejected (listed above with their line numbers)."
    assert out.splitlines()[:6] == [
        f"line 2: firstname: {refused}",
        f"line 5: firstname: {refused}",
        f"line 6: lastname: {refused}",
        f"line 7: firstname: {refused}",
        f"line 8: firstname: {refused}",
        f"line 9: firstname: {refused}",
    ]
    assert sorted(Ticket.objects.values_list("email", flat=True)) == [
        "ok1@example.com",
        "ok2@example.com",
    ]
    regular.refresh_from_db()
    assert regular.sold_count == 2


@pytest.mark.django_db
@pytest.mark.parametrize(("verbosity", "logged"), [(1, 0), (2, 2)])
def test_per_ticket_service_log_only_when_verbose(
    tmp_path, event, regular, caplog, verbosity, logged
):
    path = _csv(
        tmp_path,
        HEADER
        + "A,One,a1@example.com,0812345678,Regular,,\n"
        + "A,Two,a2@example.com,0812345678,Regular,,\n",
    )
    caplog.set_level(logging.INFO)

    _run(event, path, "--verbosity", str(verbosity))

    created = [r for r in caplog.records if r.name == "tickets.services" and "created" in r.message]
    assert len(created) == logged
    assert logging.getLogger("tickets.services").level == logging.NOTSET


@pytest.mark.django_db
def test_import_commits_in_batches_and_a_bad_row_is_never_written(
    tmp_path, event, regular, monkeypatch
):
    monkeypatch.setattr("tickets.management.commands.import_tickets.IMPORT_BATCH_ROWS", 3)
    rows = [
        f"Guest{i},Jaidee,guest{i}@example.com,08123456{i:02d},Regular,chunk-{i},\n"
        for i in range(7)
    ]
    rows[4] = "Bad,Phone,bad@example.com,123,Regular,chunk-4,\n"  # line 6, middle of chunk 2
    path = _csv(tmp_path, HEADER + "".join(rows))

    out, _, error = _run(event, path)

    assert error == "1 row rejected (listed above with their line numbers)."
    assert "line 6:" in out
    assert sorted(Ticket.objects.filter(event=event).values_list("external_id", flat=True)) == [
        f"chunk-{i}" for i in (0, 1, 2, 3, 5, 6)
    ]
    regular.refresh_from_db()
    assert regular.sold_count == 6  # the rejected row claimed no place


@pytest.mark.django_db
@pytest.mark.parametrize("dry_run", [True, False], ids=["preview", "import"])
def test_the_admin_import_refuses_control_characters_by_line_and_field(
    event, regular, member, dry_run
):
    """The admin's upload goes through the same row checks as the command."""
    text = (
        HEADER
        + "Ok,One,ok1@example.com,0812345678,Regular,,\n"  # line 2
        + '"Evil\r\nBcc: x@evil.example",Two,e@example.com,0812345678,Regular,,\n'  # lines 3-4
        + "Ok,Three,ok3@example.com,0812345678,Regular,,\n"  # line 5
    )

    report = tickets_import_file(
        event=event,
        data=text.encode(),
        file_format="csv",
        user=member,
        notify=False,
        dry_run=dry_run,
    )

    assert (report.created, report.existing, report.rejected) == (2, 0, 1)
    assert [(o.line, o.status, o.reason) for o in report.outcomes] == [
        (2, "created", ""),
        (
            3,
            "rejected",
            "firstname: Must not contain control, invisible or text-direction characters,"
            " or line breaks.",
        ),
        (5, "created", ""),
    ]
    saved = [] if dry_run else ["ok1@example.com", "ok3@example.com"]
    assert sorted(Ticket.objects.values_list("email", flat=True)) == saved
