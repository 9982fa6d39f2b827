"""Thai and English through Django's translation framework: committed catalogs, the admin too."""

import gettext
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import translation

from organizers.models import Organizer
from tests.factories import UserFactory
from tests.support import TokenClient, mint_token

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
