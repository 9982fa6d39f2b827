"""The shipped nginx configuration (deploy/nginx.conf) says what the app expects of its proxy."""

import re
from pathlib import Path

from django.urls import reverse

CONF = (Path(__file__).resolve().parent.parent.parent / "deploy" / "nginx.conf").read_text()


def _proxied_locations() -> dict[str, str]:
    """Each `location` block that proxies to the app servers, by its path."""
    blocks = re.findall(r"location ([^{]+)\{(.*?)\n        \}", CONF, flags=re.S)
    return {path.strip(): body for path, body in blocks if "proxy_pass" in body}


def test_nginx_names_the_client_that_connected_not_the_one_it_claims():
    """At the edge X-Forwarded-For is the connection's address, replacing the client's header,
    as the app servers read it from TRUSTED_PROXIES (ticketing.proxies)."""
    locations = _proxied_locations()
    assert sorted(locations) == ["/", "= /admin/tickets/ticket/import/"]
    for body in locations.values():
        assert re.findall(r"proxy_set_header X-Forwarded-For (\S+);", body) == ["$remote_addr"]
    assert "$proxy_add_x_forwarded_for;" not in CONF


def test_nginx_lets_the_import_page_see_every_file_it_takes(settings):
    """A CSV of up to IMPORT_MAX_UPLOAD_BYTES reaches the import page with the rest of its form,
    and a little more too, so that the page, not nginx, says the file is too large."""
    path = "= " + reverse("admin:tickets_ticket_import")
    body = _proxied_locations()[path]
    (megabytes,) = re.findall(r"client_max_body_size (\d+)m;", body)
    assert settings.IMPORT_MAX_UPLOAD_BYTES == 16 * 2**20
    assert int(megabytes) * 2**20 == settings.IMPORT_MAX_UPLOAD_BYTES + 2**20
    # The comment above it names the same limit.
    stated = re.search(r"IMPORT_MAX_UPLOAD_BYTES \((\d+) MB\)", CONF)
    assert int(stated.group(1)) * 2**20 == settings.IMPORT_MAX_UPLOAD_BYTES
