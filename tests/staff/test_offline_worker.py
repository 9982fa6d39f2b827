"""The check-in page's service worker as the server sends it (CONTRACT §15, offline): from under
/checkin/ so its scope covers the page, as JavaScript, with no sign-in (the browser refetches it
to update it), caching only this service's own files."""

import re

import pytest
from django.test import Client

from tests.factories import EventFactory, MembershipFactory, UserFactory

WORKER = "/checkin/worker.js"


def test_offline_worker_is_served_from_the_page_scope_as_javascript():
    response = Client().get(WORKER)

    assert response.status_code == 200
    assert response["Content-Type"] == "text/javascript; charset=utf-8"
    assert response["Service-Worker-Allowed"] == "/checkin/"
    assert response["Content-Security-Policy"] == "default-src 'none'; connect-src 'self'"
    assert "no-store" in response["Cache-Control"] or "max-age=0" in response["Cache-Control"]
    body = response.content.decode()
    assert 'var PAGE = "/checkin/";' in body
    assert (
        'var ASSETS = ["/static/checkin_page/checkin.css", "/static/checkin_page/offline_copy.js", '
        '"/static/checkin_page/signed_codes.js", "/static/checkin_page/checkin.js", '
        '"/static/checkin_page/device.js", '
        '"/static/checkin_page/vendor/zxing-wasm-3.1.4/zxing_reader.js", '
        '"/static/checkin_page/vendor/zxing-wasm-3.1.4/zxing_reader.wasm"];' in body
    )
    assert re.search(r'var VERSION = "[0-9a-f]{16}";', body)
    assert not re.search(r"https?://", body)


@pytest.mark.django_db
def test_offline_page_allows_only_its_own_worker_and_tells_the_script_where_it_is(organizer):
    staff = UserFactory(username="gate")
    MembershipFactory(user=staff, organizer=organizer, role="staff")
    EventFactory(organizer=organizer)
    client = Client()
    client.force_login(staff)

    response = client.get("/checkin/")

    csp = response["Content-Security-Policy"]
    assert "worker-src 'self'" in csp
    assert "default-src 'none'" in csp
    assert not re.search(r"https?:|\*", csp)
    assert '"worker_url": "/checkin/worker.js"' in response.content.decode()
    assert '"worker_scope": "/checkin/"' in response.content.decode()
