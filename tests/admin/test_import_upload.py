"""The admin's attendee import keeps the uploaded file on the server between the preview and the
confirmation, which names it by a signed id bound to the user and the event: a file of a few MB
is sent once, the confirmation is a small request, and nobody else can confirm it."""

import logging
import re
from datetime import timedelta
from html.parser import HTMLParser

import pytest
from django.core import signing
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.template.defaultfilters import filesizeformat
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from tests.admin.helpers import messages_of
from tests.factories import EventFactory, MembershipFactory, TicketTypeFactory, UserFactory
from tests.task_support import run_due_tasks
from tickets.admin import imports
from tickets.models import ImportUpload, Ticket
from tickets.services import import_upload
from tickets.services.import_jobs import INLINE_ROWS
from tickets.services.import_upload import tickets_import_file

HEADER = "firstname,lastname,email,phone,ticket_type,external_id\n"
REFUSED = "This preview has expired or is not yours: upload the file again."


def _csv(rows: int, ticket_type: str) -> str:
    return HEADER + "".join(
        f"Somchai{i},Jaideeyingyong{i},somchai.jaidee{i}@example-company.co.th,"
        f"08{i:08d},{ticket_type},crm-import-{i:06d}\n"
        for i in range(rows)
    )


def _url(event) -> str:
    return reverse("admin:tickets_ticket_import") + f"?event_id={event.pk}"


def _preview(client, event, text: str, notify: bool = False):
    upload = SimpleUploadedFile("attendees.csv", text.encode(), content_type="text/csv")
    data = {"file": upload, "preview": "1"} | ({"notify": "on"} if notify else {})
    return client.post(_url(event), data)


class _Forms(HTMLParser):
    """Each form's inputs (name: value), in page order."""

    def __init__(self):
        super().__init__()
        self.forms: list[dict[str, str]] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.forms.append({})
        elif tag == "input" and self.forms and attrs.get("name") and attrs.get("type") != "file":
            self.forms[-1][attrs["name"]] = attrs.get("value") or ""


def _confirm_fields(response) -> dict[str, str]:
    """What the preview's Import button posts."""
    parser = _Forms()
    parser.feed(response.content.decode())
    (form,) = [f for f in parser.forms if "confirm" in f]
    return form


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _refused(client, event, fields) -> None:
    response = client.post(_url(event), fields)
    assert response.status_code == 302 and response["Location"] == _url(event)
    assert messages_of(client.get(response["Location"])) == [REFUSED]


def _job_page(client, response):
    """The job page a redirect leads to: (its response, its progress bar's value and max)."""
    assert response.status_code == 302 and "job=" in response["Location"]
    page = client.get(response["Location"])
    bar = re.search(
        r'<progress id="import-progress" value="(\d+)" max="(\d+)"', page.content.decode()
    )
    return page, bar and (int(bar[1]), int(bar[2]))


@pytest.mark.django_db
def test_import_of_a_2_mb_file_previews_then_confirms_as_tasks_with_a_small_request(
    admin_client_a, world_a, caplog
):
    caplog.set_level(logging.WARNING, logger="tickets.services")  # not a line per ticket
    hall = TicketTypeFactory(event=world_a.event, name="Big Hall", quantity=30_000)
    text = _csv(19_000, "Big Hall")
    assert 2_100_000 < len(text.encode()) < 2_200_000

    queued = _preview(admin_client_a, world_a.event, text)

    page, bar = _job_page(admin_client_a, queued)
    assert bar == (0, 19_000) and "Waiting for a worker" in page.content.decode()
    assert '<meta http-equiv="refresh" content="1">' in page.content.decode()
    assert run_due_tasks(name_contains="import_job") == 1
    preview = admin_client_a.get(queued["Location"])
    html = preview.content.decode()
    assert "19000 tickets would be created, 0 were already imported, 0 lines are rejected." in html
    assert not Ticket.objects.filter(ticket_type=hall).exists()
    fields = _confirm_fields(preview)
    assert sorted(fields) == ["confirm", "csrfmiddlewaretoken", "upload"]

    confirmed = admin_client_a.post(_url(world_a.event), fields)

    assert int(confirmed.wsgi_request.META["CONTENT_LENGTH"]) < 2048  # no file text posted back
    assert _job_page(admin_client_a, confirmed)[1] == (0, 19_000)
    assert run_due_tasks(name_contains="import_job") == 1
    done = admin_client_a.get(confirmed["Location"])
    assert done.status_code == 302
    page = admin_client_a.get(done["Location"])
    assert page.status_code == 200
    assert messages_of(page) == ["Imported 19000 tickets (0 already imported, 0 rejected)."]
    assert Ticket.objects.filter(ticket_type=hall).count() == 19_000
    last = Ticket.objects.get(external_id="crm-import-018999")
    assert (last.firstname, last.phone, last.order.status) == (
        "Somchai18999",
        "+66800018999",
        "paid",
    )
    assert not ImportUpload.objects.exists()  # imported: kept no longer


@pytest.mark.django_db
def test_a_job_page_is_its_users_only(admin_client_a, admin_a, organizer, world_a):
    queued = _preview(admin_client_a, world_a.event, _csv(INLINE_ROWS + 1, "A Regular"))
    other = UserFactory(username="other-admin", is_staff=True)
    MembershipFactory(user=other, organizer=organizer, role="admin")

    response = _client(other).get(queued["Location"])

    assert response.status_code == 302 and response["Location"] == _url(world_a.event)
    forged = _client(admin_a).get(_url(world_a.event) + "&job=forged")
    assert forged.status_code == 302 and forged["Location"] == _url(world_a.event)


@pytest.mark.django_db
def test_import_confirmation_is_refused_to_another_user_another_event_or_a_forged_id(
    admin_client_a, admin_a, organizer, world_a
):
    text = HEADER + "Somchai,Jaidee,somchai@example.com,0812345678,A Regular,crm-1\n"
    fields = _confirm_fields(_preview(admin_client_a, world_a.event, text))
    colleague = UserFactory(username="other-admin", is_staff=True)
    MembershipFactory(user=colleague, organizer=organizer, role="admin")
    other_event = EventFactory(organizer=organizer, title="A Other")
    signed = fields["upload"]
    payload = signing.loads(signed, salt=import_upload.SIGNING_SALT)

    _refused(_client(colleague), world_a.event, fields)
    _refused(admin_client_a, other_event, fields)
    tampered = signed[:-1] + ("A" if signed[-1] != "A" else "B")
    _refused(admin_client_a, world_a.event, fields | {"upload": tampered})
    unsalted = signing.dumps(payload)
    _refused(admin_client_a, world_a.event, fields | {"upload": unsalted})
    foreign = signing.dumps(payload | {"user": colleague.pk}, salt=import_upload.SIGNING_SALT)
    _refused(_client(colleague), world_a.event, fields | {"upload": foreign})
    _refused(admin_client_a, world_a.event, fields | {"upload": ""})

    assert not Ticket.objects.filter(external_id="crm-1").exists()
    assert ImportUpload.objects.count() == 1  # the refusals did not use it up
    done = admin_client_a.post(_url(world_a.event), fields)
    assert messages_of(admin_client_a.get(done["Location"])) == [
        "Imported 1 ticket (0 already imported, 0 rejected)."
    ]
    assert Ticket.objects.get(external_id="crm-1").ticket_type == world_a.ticket_type


@pytest.mark.django_db
def test_import_confirmation_is_refused_once_used_or_expired(admin_client_a, world_a, monkeypatch):
    text = HEADER + "Somchai,Jaidee,somchai@example.com,0812345678,A Regular,\n"
    fields = _confirm_fields(_preview(admin_client_a, world_a.event, text))
    done = admin_client_a.post(_url(world_a.event), fields)
    assert messages_of(admin_client_a.get(done["Location"])) == [
        "Imported 1 ticket (0 already imported, 0 rejected)."
    ]

    _refused(admin_client_a, world_a.event, fields)  # a second click imports nothing twice
    assert Ticket.objects.filter(email="somchai@example.com").count() == 1

    later = _confirm_fields(_preview(admin_client_a, world_a.event, text))
    monkeypatch.setattr(import_upload, "CONFIRM_WITHIN_SECONDS", -1)
    _refused(admin_client_a, world_a.event, later)
    assert Ticket.objects.filter(email="somchai@example.com").count() == 1


@pytest.mark.django_db
def test_import_carries_the_notify_choice_to_the_confirmation(admin_client_a, world_a):
    text = HEADER + "Somchai,Jaidee,somchai@example.com,0812345678,A Regular,crm-1\n"
    preview = _preview(admin_client_a, world_a.event, text, notify=True)
    fields = _confirm_fields(preview)
    assert sorted(fields) == ["confirm", "csrfmiddlewaretoken", "upload"]
    assert signing.loads(fields["upload"], salt=import_upload.SIGNING_SALT)["notify"] is True


@pytest.mark.django_db
def test_import_refuses_a_file_over_the_limit_before_reading_it(
    admin_client_a, world_a, settings, monkeypatch
):
    settings.IMPORT_MAX_UPLOAD_BYTES = 1000

    def not_read(*args, **kwargs):
        raise AssertionError("an oversized file was read")

    monkeypatch.setattr(imports, "upload_rows", not_read)
    monkeypatch.setattr(imports, "tickets_import_file", not_read)
    text = HEADER + "Somchai,Jaidee,somchai@example.com,0812345678,A Regular,crm-1\n"
    text += "x" * (1001 - len(text.encode()))

    response = _preview(admin_client_a, world_a.event, text)

    assert response.status_code == 200
    assert response.context["form"].errors == {
        "file": [
            "The file is 1001\xa0bytes; this page takes files up to 1000\xa0bytes. "
            "Split it into smaller files and import each."
        ]
    }
    assert not ImportUpload.objects.exists()


@pytest.mark.django_db
def test_import_page_says_the_largest_file_it_takes(admin_client_a, world_a, settings):
    assert settings.IMPORT_MAX_UPLOAD_BYTES == 16 * 1024 * 1024
    page = admin_client_a.get(_url(world_a.event))

    limit = filesizeformat(settings.IMPORT_MAX_UPLOAD_BYTES)
    assert limit == "16.0\xa0MB"
    assert f"Files up to {limit}" in page.content.decode()


@pytest.mark.django_db
def test_import_upload_deletes_uploads_older_than_a_day(admin_client_a, admin_a, world_a):
    def kept_since(hours):
        upload = ImportUpload.objects.create(event=world_a.event, uploaded_by=admin_a, data=b"x")
        ImportUpload.objects.filter(pk=upload.pk).update(
            created_at=timezone.now() - timedelta(hours=hours)
        )
        return upload.pk

    stale, recent = kept_since(25), kept_since(23)
    text = HEADER + "Somchai,Jaidee,somchai@example.com,0812345678,A Regular,crm-1\n"

    _preview(admin_client_a, world_a.event, text)

    left = set(ImportUpload.objects.values_list("pk", flat=True))
    assert stale not in left and recent in left and len(left) == 2


@pytest.mark.django_db
def test_import_preview_inserts_nothing_but_the_upload(admin_client_a, world_a):
    text = HEADER + "".join(
        f"Name{i},Surname{i},n{i}@example.com,08{i:08d},A Regular,crm-{i}\n" for i in range(5)
    )

    with CaptureQueriesContext(connection) as queries:
        preview = _preview(admin_client_a, world_a.event, text)

    assert "5 tickets would be created" in preview.content.decode()
    inserts = [q["sql"] for q in queries if q["sql"].lstrip().upper().startswith("INSERT")]
    assert len(inserts) == 1 and "tickets_importupload" in inserts[0]


@pytest.mark.django_db
def test_import_preview_sees_earlier_batches_as_the_import_does(admin_a, world_a, monkeypatch):
    """A preview writes nothing, yet a later batch sees the earlier ones' rows: their
    external_ids (a replay, or one with other details), chosen codes and places."""
    monkeypatch.setattr(import_upload, "IMPORT_BATCH_ROWS", 2)
    small = TicketTypeFactory(event=world_a.event, name="Small", quantity=3)
    text = (
        "firstname,lastname,email,phone,ticket_type,external_id,reference_code\n"
        "Ann,One,ann@example.com,0811111111,Small,crm-1,CHOSEN-01\n"
        "Bob,Two,bob@example.com,0822222222,Small,crm-2,\n"
        "Ann,One,ann@example.com,0811111111,Small,crm-1,\n"
        "Cat,Three,cat@example.com,0833333333,Small,crm-1,\n"
        "Dan,Four,dan@example.com,0844444444,Small,,chosen-01\n"
        "Eve,Five,eve@example.com,0855555555,Small,crm-5,\n"
        "Fay,Six,fay@example.com,0866666666,Small,crm-6,\n"
    )

    def outcomes(dry_run):
        report = tickets_import_file(
            event=world_a.event,
            data=text.encode(),
            file_format="csv",
            user=admin_a,
            notify=False,
            dry_run=dry_run,
        )
        return [(o.line, o.status, o.reason) for o in report.outcomes]

    previewed = outcomes(dry_run=True)
    assert not Ticket.objects.filter(ticket_type=small).exists()

    assert previewed == outcomes(dry_run=False)
    assert previewed == [
        (2, "created", ""),
        (3, "created", ""),
        (4, "existing", ""),
        (5, "rejected", "Ticket CHOSEN-01 already has this external_id, with other details."),
        (6, "rejected", "Reference code CHOSEN-01 is taken in this event."),
        (7, "created", ""),
        (8, "rejected", "Ticket type 'Small' has no places left."),
    ]
