"""Thai and English through Django's translation framework: committed catalogs, the admin too."""

import email
import email.policy
import gettext
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.conf import settings
from django.core import mail
from django.utils import translation

from organizers.models import Organizer
from tests.factories import UserFactory
from tests.support import TokenClient, mint_token
from ticketing.dates import human_date
from tickets.links import ticket_page_path
from tickets.models import Ticket
from tickets.notifications import ticket_email_send

from .helpers import ticket_songkran

pytestmark = pytest.mark.django_db

CATALOG = Path(settings.BASE_DIR) / "locale" / "th" / "LC_MESSAGES"


def test_compiled_catalog_is_committed_and_matches_its_source():
    """Every translation in the .po is what the compiled .mo answers (`compilemessages` ran)."""
    po = (CATALOG / "django.po").read_text()
    with (CATALOG / "django.mo").open("rb") as mo:
        catalog = gettext.GNUTranslations(mo)
    pairs = re.findall(r'^msgid "(.+)"\nmsgstr "(.+)"$', po, re.M)
    assert len(pairs) >= 20
    for msgid, msgstr in pairs:
        assert catalog.gettext(msgid.replace('\\"', '"')) == msgstr.replace('\\"', '"')
    with translation.override("th"):
        assert translation.gettext("Ticket not found") == "ไม่พบบัตร"


def test_thai_catalog_translates_every_message_it_holds():
    """No message of the catalog is left untranslated or fuzzy (a fuzzy one is not used, so
    its page shows English): staff at a Thai gate read every label in Thai."""
    entries = (CATALOG / "django.po").read_text().split("\n\n")[1:]  # the header first
    untranslated = [
        entry
        for entry in entries
        if "#, fuzzy" in entry or re.search(r'^msgstr(\[0\])? ""$(?!\n")', entry, re.M)
    ]
    assert [re.search(r"^msgid .*$", entry, re.M)[0] for entry in untranslated] == []


def test_admin_offers_thai(client):
    response = client.get("/admin/login/", HTTP_ACCEPT_LANGUAGE="th")

    assert response.status_code == 200
    assert response["Content-Language"] == "th"
    assert "<title>เข้าสู่ระบบ |" in response.content.decode()


def test_the_api_answers_in_english_whatever_the_client_asks(
    application, member, organizer, event, ticket_type
):
    """Pages follow the browser; the API's messages are part of its contract and stay."""
    client = TokenClient(mint_token(application=application, user=member, scope="public organizer"))
    url = f"/api/public/organizers/{organizer.id}/events/{event.id}/tickets"

    thai = client.post(url, {"ticket_type_id": "x"}, HTTP_ACCEPT_LANGUAGE="th")
    english = client.post(url, {"ticket_type_id": "x"})

    assert thai.json() == english.json()
    assert thai.json()["fields"]["firstname"] == ["This field is required."]
    assert "Content-Language" not in thai


def test_organizer_admin_sets_the_email_language(client, organizer):
    admin = UserFactory(is_staff=True, is_superuser=True)
    client.force_login(admin)
    url = f"/admin/organizers/organizer/{organizer.pk}/change/"
    form = client.get(url).content.decode()
    assert '<option value="th+en" selected>Thai, with English below</option>' in form

    response = client.post(
        url,
        {
            "name": organizer.name,
            "slug": organizer.slug,
            "description": "",
            "email_language": "en",
            "memberships-TOTAL_FORMS": "0",
            "memberships-INITIAL_FORMS": "0",
        },
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    organizer.refresh_from_db()
    assert organizer.email_language == Organizer.EmailLanguage.ENGLISH


# One calendar per language (ticketing.dates): Thai in the Buddhist era with Thai month names,
# English in the Gregorian. The event is 24 December 2026 (CE), 19:00-23:30 in Bangkok.


def _visible(html: str) -> str:
    """Text a reader sees: the machine-readable `datetime` attributes stay ISO 8601."""
    return re.sub(r"<[^>]*>", " ", re.sub(r"<style\b.*?</style>", " ", html, flags=re.S))


def test_ticket_page_in_thai_counts_years_in_the_buddhist_era(client, organizer):
    ticket = ticket_songkran(organizer)
    used_at = datetime(2026, 12, 24, 12, 41, tzinfo=UTC)
    Ticket.objects.filter(pk=ticket.pk).update(status=Ticket.Status.USED, used_at=used_at)

    html = client.get(ticket_page_path(ticket), HTTP_ACCEPT_LANGUAGE="th").content.decode()

    assert '<time datetime="2026-12-24T19:00:00+07:00">24 ธันวาคม 2569, 19:00</time>' in html
    assert '<time datetime="2026-12-24T23:30:00+07:00">23:30</time>' in html
    assert "ใช้แล้ว: เช็คอินเมื่อ 24 ธันวาคม 2569, 19:41</p>" in html
    assert "2026" not in _visible(html)


def test_ticket_page_in_english_keeps_the_gregorian_year(client, organizer):
    ticket = ticket_songkran(organizer)

    html = client.get(ticket_page_path(ticket), HTTP_ACCEPT_LANGUAGE="en").content.decode()

    assert '<time datetime="2026-12-24T19:00:00+07:00">Dec. 24, 2026, 7 p.m.</time>' in html
    assert "2569" not in html


def _email_bodies(ticket) -> tuple[str, str]:
    ticket_email_send(ticket_id=ticket.pk)
    assert len(mail.outbox) == 1
    message = email.message_from_bytes(
        mail.outbox[0].message().as_bytes(), policy=email.policy.default
    )
    return (
        message.get_body(("plain",)).get_content(),
        message.get_body(("html",)).get_content(),
    )


def test_thai_email_counts_years_in_the_buddhist_era(organizer):
    organizer.email_language = Organizer.EmailLanguage.THAI
    organizer.save()

    text, html = _email_bodies(ticket_songkran(organizer))

    when = "พฤหัสบดี 24 ธันวาคม 2569, 19:00 – 23:30 (Asia/Bangkok)"
    assert f"วันและเวลา: {when}" in text
    assert f"<td>{when}</td>" in html
    assert "2026" not in text
    assert "2026" not in _visible(html)


def test_thai_and_english_email_gives_each_language_its_calendar(organizer):
    assert organizer.email_language == Organizer.EmailLanguage.THAI_ENGLISH

    text, html = _email_bodies(ticket_songkran(organizer))

    for body in (text, html):
        thai = body.index("พฤหัสบดี 24 ธันวาคม 2569, 19:00")
        english = body.index("Thursday 24 December 2026, 19:00")
        assert thai < english
        assert "December 2569" not in body and "ธันวาคม 2026" not in body


def test_dates_for_people_follow_the_active_language():
    """The one helper every page and email formats with; outside them, the site's default."""
    at = datetime(2026, 1, 5, 2, 30, tzinfo=UTC)  # 09:30 on 5 January in Bangkok

    with translation.override("th"):
        assert human_date(at, "long") == "จันทร์ 5 มกราคม 2569, 09:30"
        assert human_date(at, "short") == "5 ม.ค. 2569 09:30"
        assert human_date(at.date(), "DATE_FORMAT") == "5 มกราคม 2569"
    with translation.override("en"):
        assert human_date(at, "long") == "Monday 5 January 2026, 09:30"
        assert human_date(at, "short") == "5 Jan 2026 09:30"
    assert human_date(at, "short", language="th") == "5 ม.ค. 2569 09:30"
    assert human_date(None) == ""
