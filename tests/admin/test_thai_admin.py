"""The admin in Thai (issue 40, item 11): every model, field, choice and action is named in Thai,
every page staff read is in Thai, and every date is in the one style of `ticketing.dates`, whose
Thai year is the Buddhist era's (2026 is 2569).

Two nets: the names, walked from the models and the admin's registry (a string that was never
marked for translation, or has no Thai, fails here); and the pages, rendered under a Thai
browser with Thai data, whose visible text may hold no English word but the file formats,
column names and codes that are the same in every language."""

import html
import re
from datetime import datetime
from pathlib import Path

import pytest
from django.apps import apps
from django.conf import settings
from django.contrib import admin
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client, RequestFactory
from django.urls import reverse
from django.utils import timezone, translation

from checkin.models import CheckInLog
from events.models import EventSigningKey
from tests.admin.test_dashboard import _festival
from tests.factories import (
    ApplicationFactory,
    CheckInTypeFactory,
    EventFactory,
    MembershipFactory,
    OrderFactory,
    OrganizerFactory,
    TicketFactory,
    TicketTypeFactory,
    UserFactory,
)
from ticketing.dates import admin_date
from tickets.email_status import TicketEmail
from webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint, WebhookEvent

pytestmark = pytest.mark.django_db

BASE_DIR = Path(settings.BASE_DIR)


def _ours(model) -> bool:
    """A model of this project's apps (not Django's or a library's)."""
    app_path = Path(apps.get_app_config(model._meta.app_label).path)
    # Not an installed library, whichever virtualenv inside the checkout holds it (.venv312).
    return BASE_DIR in app_path.parents and "site-packages" not in app_path.parts


def _admin_models() -> set:
    """Every model whose rows the admin shows: registered, or an inline of a registered one."""
    shown = set()
    for model, model_admin in admin.site._registry.items():
        if _ours(model):
            shown.add(model)
            shown.update(inline.model for inline in model_admin.inlines)
    return shown


def _names(model) -> list[tuple[str, object]]:
    """(where, lazy text) of the model's names, its fields' and their choices'."""
    meta = model._meta
    names = [
        (f"{meta.label}", meta.verbose_name),
        (f"{meta.label} plural", meta.verbose_name_plural),
    ]
    for field in meta.get_fields():
        if field.auto_created and not field.concrete:
            continue  # a reverse relation: named by the model it comes from
        if field.primary_key and field.name == "id":
            continue  # "ID", the same in Thai
        names.append((f"{meta.label}.{field.name}", field.verbose_name))
        names += [
            (f"{meta.label}.{field.name} = {value}", label)
            for value, label in (field.flatchoices or [])
            if value != ""
        ]
    return names


def _untranslated(pairs) -> list[str]:
    """Where the text (lazy, or a function that renders it) reads the same in Thai."""
    missing = []
    for where, text in pairs:
        with translation.override("en"):
            english = text() if callable(text) else str(text)
        with translation.override("th"):
            thai = text() if callable(text) else str(text)
        if thai == english:
            missing.append(f"{where}: {english!r}")
    return missing


def test_every_model_field_and_choice_the_admin_shows_has_a_thai_name():
    models = {m for m in apps.get_models() if _ours(m)} | _admin_models()
    assert len(models) >= 20

    assert _untranslated(name for model in models for name in _names(model)) == []


def test_every_admin_action_filter_and_column_has_a_thai_name():
    request = RequestFactory().get("/admin/")
    request.user = UserFactory(username="root", is_staff=True, is_superuser=True)
    texts = []
    for model, model_admin in admin.site._registry.items():
        if not _ours(model):
            continue
        label = model._meta.label
        for name, _ in model_admin.get_action_choices(request, []):
            # Rendered in each language: the choice's text is formatted when it is asked for.
            texts.append(
                (
                    f"{label} action {name}",
                    lambda ma=model_admin, n=name: dict(ma.get_action_choices(request, []))[n],
                )
            )
        for name in model_admin.get_list_display(request):
            column = getattr(model_admin, name, None) if isinstance(name, str) else name
            if column is not None and hasattr(column, "short_description"):
                texts.append((f"{label} column {name}", column.short_description))
        for item in model_admin.list_filter:
            if isinstance(item, type) and issubclass(item, admin.SimpleListFilter):
                texts.append((f"{label} filter {item.__name__}", item.title))
    assert len(texts) > 30

    assert _untranslated(texts) == []


# --- the pages, rendered in Thai ------------------------------------------------------------

# What may stay in Latin letters on a Thai page besides abbreviations (all capitals: CSV, API,
# NFC, MB): names of formats and products, the import file's column names, the time zone.
ALLOWED = {
    "csv", "xlsx", "excel", "workbook", "mac", "openid", "connect", "paste", "values", "text",
    "firstname", "lastname", "email", "phone", "ticket_type", "external_id", "reference_code",
    "asia", "bangkok", "control", "command",
    "ping",  # a webhook event's type, as its receiver reads it (ticket.created is dotted)
}  # fmt: skip
# Not read as text: scripts, styles, and preformatted data (a webhook's JSON body).
_HIDDEN = re.compile(r"<(script|style|noscript|pre)\b.*?</\1>|<!--.*?-->", re.S)
_TAG = re.compile(r"<[^>]*>")
_WORD = re.compile(r"[A-Za-z][A-Za-z_]+")
# Data and codes: addresses, links, anything with a digit (ids, codes, times), dotted names
# (webhook event types such as ticket.created, E.164), and words in capitals.
_DATA = re.compile(r"\S+@\S+|https?://\S+|\S*\d\S*|\w+(?:\.\w+)+|\b[A-Z]+\b")


def _english(page: str) -> set[str]:
    """The Latin words a reader of the page sees (text and labels), outside data and codes."""
    labels = re.findall(r'(?:aria-label|title|placeholder)="([^"]*)"', page)
    text = html.unescape(" ".join([_TAG.sub(" ", _HIDDEN.sub(" ", page)), *labels]))
    text = _DATA.sub(" ", text)
    return {word for word in _WORD.findall(text) if word.lower() not in ALLOWED}


@pytest.fixture
def thai_world():
    organizer = OrganizerFactory(name="บางกอก ไลฟ์", slug="bkk-2569")
    event = EventFactory(organizer=organizer, title="เทศกาลลอยกระทง", location_name="สวนลุม")
    standing = TicketTypeFactory(event=event, name="บัตรยืน", quantity=100)
    CheckInTypeFactory(event=event, name="วันแรก")
    order = OrderFactory(
        event=event, buyer_firstname="มาลี", buyer_lastname="ศรีสุข", buyer_email="m@example.com"
    )
    people = {"firstname": "สมชาย", "lastname": "ใจดี", "email": "s@example.com"}
    ticket = TicketFactory(event=event, ticket_type=standing, order=order, **people)
    used_at = timezone.make_aware(datetime(2026, 11, 20, 19, 30))
    used = TicketFactory(
        event=event, ticket_type=standing, order=order, status="used", used_at=used_at, **people
    )
    staff = UserFactory(username="สมศรี", full_name="สมศรี ประตูหนึ่ง", is_staff=True)
    MembershipFactory(user=staff, organizer=organizer, role="owner")
    gate = ApplicationFactory(organizer=organizer, name="แอปประตูเหนือ")
    log = CheckInLog.objects.create(
        ticket=used, event=event, action="check_in", at=used_at, actor_user=staff, note="ประตู"
    )
    TicketEmail.objects.create(
        ticket=ticket, status="sent", recipient="s@example.com", at=used_at, attempts=1
    )
    endpoint = WebhookEndpoint.objects.create(
        organizer=organizer, url="https://hooks.example.com/t", event_types=["*"]
    )
    webhook = WebhookEvent.objects.create(organizer=organizer, type="ping", payload={"data": {}})
    delivery = WebhookDelivery.objects.create(event=webhook, endpoint=endpoint)
    WebhookAttempt.objects.create(
        delivery=delivery, attempted_at=used_at, status_code=200, duration_ms=12
    )
    client = Client(HTTP_ACCEPT_LANGUAGE="th")
    client.force_login(staff)
    return locals()


def _pages(world) -> dict[str, str]:
    event, ticket, order = world["event"], world["ticket"], world["order"]
    pages = {"index": reverse("admin:index")}
    for name in (
        "events_event",
        "events_tickettype",
        "tickets_ticket",
        "tickets_order",
        "organizers_organizer",
        "oauth_setup_application",
        "checkin_checkinlog",
        "checkin_scanrecord",
        "webhooks_webhookendpoint",
        "webhooks_webhookdelivery",
    ):
        pages[name] = reverse(f"admin:{name}_changelist")
    objects = {
        "events_event": event,
        "tickets_ticket": ticket,
        "tickets_order": order,
        "organizers_organizer": world["organizer"],
        "oauth_setup_application": world["gate"],
        "webhooks_webhookendpoint": world["endpoint"],
        "webhooks_webhookdelivery": world["delivery"],
    }
    for name, obj in objects.items():
        pages[f"{name} change"] = reverse(f"admin:{name}_change", args=[obj.pk])
    pages["events_event add"] = reverse("admin:events_event_add")
    pages["ticket history"] = reverse("admin:tickets_ticket_history", args=[ticket.pk])
    pages["dashboard"] = reverse("event-dashboard", args=[event.pk])
    pages["import"] = reverse("admin:tickets_ticket_import") + f"?event_id={event.pk}"
    return pages


def test_thai_admin_pages_show_no_english(thai_world):
    client = thai_world["client"]
    key_ids = set(EventSigningKey.objects.values_list("key_id", flat=True))  # random codes
    seen = {}
    for name, url in _pages(thai_world).items():
        response = client.get(url)
        assert response.status_code == 200, name
        assert response["Content-Language"] == "th", name
        seen[name] = _english(response.content.decode()) - key_ids

    assert {name: words for name, words in seen.items() if words} == {}


def test_thai_action_pages_and_import_preview_show_no_english(thai_world):
    client, event = thai_world["client"], thai_world["event"]
    changelist = reverse("admin:tickets_ticket_changelist")
    ticket_ids = [thai_world["ticket"].pk, thai_world["used"].pk]
    pages = {
        action: client.post(changelist, {"action": action, "_selected_action": ticket_ids})
        for action in ("revoke", "check_in")
    }
    pages["cancel_orders"] = client.post(
        reverse("admin:tickets_order_changelist"),
        {"action": "cancel_orders", "_selected_action": [thai_world["order"].pk]},
    )
    text = "firstname,lastname,email,phone,ticket_type\nนก,น้อย,nok@example.com,0812345678,บัตรยืน\n"
    text += "นก,น้อย,อีเมลผิด,0812345678,ไม่มี\n"
    pages["import preview"] = client.post(
        reverse("admin:tickets_ticket_import") + f"?event_id={event.pk}",
        {"file": SimpleUploadedFile("people.csv", text.encode()), "preview": "1"},
    )

    assert {name: r.status_code for name, r in pages.items()} == dict.fromkeys(pages, 200)
    found = {name: _english(r.content.decode()) for name, r in pages.items()}
    # The second row's reasons are the API's validation messages, English by contract.
    found["import preview"] -= {"Enter", "valid", "address"}
    assert {name: words for name, words in found.items() if words} == {}


def test_thai_dashboard_counts_years_in_the_buddhist_era(organizer):
    event = _festival(organizer)  # check-ins on 20 November 2026 (CE), from 18:00 in Bangkok
    user = UserFactory(username="boss", is_staff=True)
    MembershipFactory(user=user, organizer=organizer, role="admin")
    client = Client(HTTP_ACCEPT_LANGUAGE="th")
    client.force_login(user)

    response = client.get(reverse("event-dashboard", args=[event.pk]))

    page = response.content.decode()
    generated = response.context["dashboard"].stats.generated_at
    with translation.override("th"):
        as_of = admin_date(generated)
    assert str(timezone.localtime(generated).year + 543) in as_of
    assert (
        f'<time id="generated-at" datetime="{timezone.localtime(generated).isoformat()[:19]}'
        in page
    )
    assert f">{as_of}</time>" in page
    assert ">20 พ.ย. 2569 18:00</text>" in page  # the chart's first tick
    assert "<title>20 พ.ย. 2569 18:00 – 18:15: 3</title>" in page
    assert "<caption>การเช็คอินแยกตามจุดตรวจ</caption>" in page
    assert '<th scope="col">ประตู</th><th scope="col">เจ้าหน้าที่</th>' in page
    assert '<th scope="col">แอปพลิเคชัน</th>' in page
    visible = _TAG.sub(" ", _HIDDEN.sub(" ", page))
    assert "2026" not in visible and "Nov" not in visible


def test_thai_admin_lists_dates_in_the_buddhist_era(thai_world):
    client = thai_world["client"]
    log_list = client.get(reverse("admin:checkin_checkinlog_changelist")).content.decode()
    ticket = client.get(
        reverse("admin:tickets_ticket_change", args=[thai_world["used"].pk])
    ).content.decode()
    history = client.get(
        reverse("admin:tickets_order_change", args=[thai_world["order"].pk])
    ).content.decode()

    assert '<td class="field-at_shown">20 พ.ย. 2569 19:30</td>' in log_list
    assert "20 พ.ย. 2569 19:30" in ticket  # used at, in the lifecycle, and the check-in history
    assert (
        "ส่งแล้ว</strong> ถึง s@example.com เมื่อ 20 พ.ย. 2569 19:30"
        in client.get(
            reverse("admin:tickets_ticket_change", args=[thai_world["ticket"].pk])
        ).content.decode()
    )
    for page in (log_list, ticket, history):
        assert "2026" not in _TAG.sub(" ", _HIDDEN.sub(" ", page))
    with translation.override("en"):
        assert admin_date(timezone.make_aware(datetime(2026, 11, 20, 19, 30))) == (
            "20 Nov 2026 19:30"
        )
