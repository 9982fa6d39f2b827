"""The sign-in and consent pages speak the browser's language (Accept-Language), Thai included.

A Thai reader meets them first, before any ticket: every word they read is translated, the scope
descriptions too. What stays as it is are names (the application's, its organizer's, the user's)
and the scope identifiers, which are what the application's developer asked for.
"""

import re

import pytest

from tests.oauth.flow import authorize_url, browser, csrf_token, hidden_fields

pytestmark = pytest.mark.django_db

THAI = {"HTTP_ACCEPT_LANGUAGE": "th"}
# Names and identifiers the pages show as they are, in any language.
NAMES = {"Gate", "Platform", "app", "Bangkok", "Live", "staff", "public", "organizer"}


def _visible_text(html: str) -> str:
    """What a reader sees: text between tags and the attributes shown or read aloud."""
    html = re.sub(r"<(style|script)\b.*?</\1>", " ", html, flags=re.S)
    shown = re.findall(r'\b(?:alt|title|placeholder|aria-label)="([^"]*)"', html)
    return " ".join([re.sub(r"<[^>]*>", " ", html), *shown])


def _english_words(html: str) -> set[str]:
    return set(re.findall(r"[A-Za-z][A-Za-z'’-]*", _visible_text(html))) - NAMES


def _thai(response) -> str:
    assert response["Content-Language"] == "th"
    html = response.content.decode()
    assert '<html lang="th">' in html
    return html


def test_login_page_is_thai_under_a_thai_browser(client, application):
    response = client.get("/oauth/login/", {"next": authorize_url(application)}, **THAI)

    assert response.status_code == 200
    html = _thai(response)
    assert "<title>เข้าสู่ระบบ · บัตรเข้างาน</title>" in html
    assert "<h1>เข้าสู่ระบบ</h1>" in html
    assert "เพื่อดำเนินการต่อไปยัง" in html
    assert '<label for="id_username">ชื่อผู้ใช้</label>' in html
    assert '<label for="id_password">รหัสผ่าน</label>' in html
    assert _english_words(html) == set()


def test_login_page_errors_are_thai(client, member):
    response = client.post("/oauth/login/", {"username": "staff", "password": "wrong"}, **THAI)

    assert response.status_code == 200
    html = _thai(response)
    assert "กรุณาใส่" in html  # Django's own message for a wrong password, in Thai
    assert _english_words(html) == set()


def test_too_many_sign_ins_page_is_thai(client, member):
    statuses = [
        client.post("/oauth/login/", {"username": "staff", "password": f"guess-{n}"}, **THAI)
        for n in range(11)
    ]

    assert [r.status_code for r in statuses] == [200] * 10 + [429]
    html = _thai(statuses[-1])
    assert "<h1>เข้าสู่ระบบผิดพลาดหลายครั้งเกินไป</h1>" in html
    assert _english_words(html) == set()


def test_consent_page_is_thai_scope_descriptions_too(application, member):
    client = browser(member)

    response = client.get(authorize_url(application, scope="public organizer"), **THAI)

    assert response.status_code == 200
    html = _thai(response)
    assert 'อนุญาตให้ <span class="app">Gate app</span> ใช้บัญชีของคุณหรือไม่' in html
    assert "แอปพลิเคชันนี้เป็นของ <strong>Bangkok Live</strong>" in html
    assert "ดูโปรไฟล์ของคุณ" in html  # the scope `public`
    assert "ทำงานให้ผู้จัดงานที่คุณเป็นสมาชิก" in html  # the scope `organizer`
    assert '<button type="submit" name="deny" value="1">ปฏิเสธ</button>' in html
    assert '<button type="submit" class="primary" name="allow" value="on">อนุญาต</button>' in html
    assert "ออกจากระบบ" in html
    assert _english_words(html) == set()


def test_platform_consent_and_incomplete_request_pages_are_thai(platform_application, member):
    client = browser(member)
    page = client.get(authorize_url(platform_application), **THAI)
    html = _thai(page)
    assert "แอปพลิเคชันนี้ดำเนินการโดยระบบขายบัตรเอง" in html
    assert _english_words(html) == set()

    altered = {**hidden_fields(html), "csrfmiddlewaretoken": csrf_token(html), "allow": "on"}
    altered.pop("client_id")
    response = client.post("/oauth/authorize", altered, **THAI)

    assert response.status_code == 400
    html = _thai(response)
    assert "<h1>คำขออนุญาตนี้ไม่ครบถ้วน</h1>" in html
    assert _english_words(html) == set()


def test_login_and_consent_stay_english_for_an_english_browser(application, member):
    login = browser().get("/oauth/login/", {"next": authorize_url(application)})
    consent = browser(member).get(authorize_url(application), HTTP_ACCEPT_LANGUAGE="en")

    assert login["Content-Language"] == "en"
    assert "<h1>Sign in</h1>" in login.content.decode()
    assert 'Allow <span class="app">Gate app</span> to use your account?' in (
        consent.content.decode()
    )
    assert "See your profile (name, email, phone, birthday)" in consent.content.decode()


def test_authorization_error_page_is_thai_around_the_protocols_error(application, member):
    page = browser(member).get(
        authorize_url(application, redirect_uri="https://evil.example.com/callback"), **THAI
    )

    assert page.status_code == 400
    html = _thai(page)
    assert "<title>เกิดข้อผิดพลาดในการขออนุญาต · บัตรเข้างาน</title>" in html
    assert "<h1>ไม่สามารถดำเนินการตามคำขออนุญาตนี้ได้</h1>" in html
    # oauthlib's code and description, for the application's developer, marked as English.
    error = re.search(r'<p lang="en">(.*?)</p>', html).group(1)
    assert error == "<strong>invalid_request</strong>: Mismatching redirect URI."
    assert _english_words(html.replace(error, "")) == set()
