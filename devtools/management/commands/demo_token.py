"""`demo_token`: a user token for local development, without a client listening for the code.

The demo application's redirect URI has nothing behind it and codes live 60 s, so this runs the
authorization-code flow in-process, through the real `/oauth/authorize` (consent, Allow) and
`/oauth/token` endpoints, as the demo application, for a demo user.
"""

import base64
import hashlib
import json
import secrets
from urllib.parse import parse_qs, urlencode, urlsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.test import Client

from devtools.demo import REDIRECT_URI
from devtools.demo_people import ORGANIZERS

from .bootstrap_demo import _logs_on_stderr


class Command(BaseCommand):
    help = (
        "Sign a demo user in to the demo application through /oauth/authorize and "
        "/oauth/token, and print the access token. Development only (DEBUG on)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--user", default="staff", help="Username (default: staff).")
        parser.add_argument(
            "--scope", default="public", help='Space-separated scopes, e.g. "public organizer".'
        )
        parser.add_argument(
            "--json", action="store_true", help="Print the whole token response as JSON."
        )

    def handle(self, *args, **options):
        if not settings.DEBUG:
            raise CommandError(
                "demo_token signs users in with the demo application's published secret: "
                "it runs only with DEBUG on."
            )
        user = get_user_model().objects.filter(username=options["user"]).first()
        if user is None:
            raise CommandError(f"No user '{options['user']}'; run `manage.py bootstrap_demo`.")
        with _logs_on_stderr():  # the request log would land among what this prints
            token = _authorization_code_flow(user, options["scope"])
        if options["json"]:
            self.stdout.write(json.dumps(token))
        else:
            self.stdout.write(token["access_token"])


def _authorization_code_flow(user, scope: str) -> dict:
    app = ORGANIZERS[0]
    # Requests name the host clients use, which ALLOWED_HOSTS accepts and `iss` carries.
    host = urlsplit(settings.SITE_URL).netloc
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    request = {
        "client_id": app["client_id"],
        "redirect_uri": REDIRECT_URI,
        "response_type": "code",
        "scope": scope,
        "state": secrets.token_urlsafe(16),
        "code_challenge": challenge.rstrip(b"=").decode(),
        "code_challenge_method": "S256",
    }
    authorize = f"/oauth/authorize?{urlencode(request)}"

    browser = Client(HTTP_HOST=host)
    browser.force_login(user)
    page = browser.get(authorize)
    if page.status_code != 200:  # the consent page; an error redirect or page otherwise
        raise CommandError(f"/oauth/authorize refused: {_redirect_params(page) or _said(page)}")
    # Allow, as the consent page's form would send it.
    answer = browser.post(authorize, {**request, "redirect_uri_named": "True", "allow": "on"})
    params = _redirect_params(answer)
    if "code" not in params:
        raise CommandError(f"/oauth/authorize gave no code: {params or _said(answer)}")

    response = Client(HTTP_HOST=host).post(
        "/oauth/token",
        {
            "grant_type": "authorization_code",
            "code": params["code"],
            "redirect_uri": REDIRECT_URI,
            "client_id": app["client_id"],
            "client_secret": app["client_secret"],
            "code_verifier": verifier,
        },
    )
    if response.status_code != 200:
        raise CommandError(f"/oauth/token answered {response.status_code}: {_said(response)}")
    return response.json()


def _redirect_params(response) -> dict[str, str]:
    query = urlsplit(response.get("Location", "")).query
    return {name: values[0] for name, values in parse_qs(query).items()}


def _said(response) -> str:
    return response.content.decode(errors="replace")[:300]
