import json
import logging
import sys
from contextlib import contextmanager

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from devtools.demo import demo_bootstrap

DEMO_FLAG = "--i-know-this-is-a-demo"


class Command(BaseCommand):
    help = (
        "Create the demo organizers, users, events and tickets (idempotent) and print credentials."
        f" Refused when DEBUG is off, unless {DEMO_FLAG} is given."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--json", action="store_true", help="Print exactly one JSON object and nothing else."
        )
        parser.add_argument(
            DEMO_FLAG,
            action="store_true",
            dest="demo",
            help="Run even though DEBUG is off: this site is a demo, and anyone may log in with "
            "the printed credentials.",
        )

    def handle(self, *args, **options):
        # The demo's superuser has a published password: on a real site it is an open door.
        if not settings.DEBUG and not options["demo"]:
            raise CommandError(
                "DEBUG is off, so this looks like a production site, and the demo creates the "
                "superuser 'admin' with a published password. Nothing was created. If this site "
                f"is a demo, run again with {DEMO_FLAG}."
            )
        if options["json"]:
            with _logs_on_stderr():
                data = demo_bootstrap().as_dict()
            self.stdout.write(_dumps(data))
            return
        data = demo_bootstrap().as_dict()
        self.stdout.write(_human(data))


@contextmanager
def _logs_on_stderr():
    """Logs go to stdout in production; with --json, stdout must hold the JSON object alone."""
    moved = [
        handler
        for handler in logging.getLogger().handlers
        if isinstance(handler, logging.StreamHandler) and handler.stream is sys.stdout
    ]
    for handler in moved:
        handler.setStream(sys.stderr)
    try:
        yield
    finally:
        for handler in moved:
            handler.setStream(sys.stdout)


def _dumps(data: dict) -> str:
    return json.dumps(data, ensure_ascii=False)


def _human(data: dict) -> str:
    organizer = data["organizers"][0]
    app = organizer["application"]
    auth, base = data["auth_url"], data["base_url"]
    users = data["users"]
    lines = [
        "Demo data ready (local use only; these credentials are fixed and public).",
        f"  Admin:     {auth}/admin/  {data['admin']['username']} / {data['admin']['password']}",
        f"  Staff:     {users['staff']['username']} / {users['staff']['password']}"
        f"  (admin of organizer {organizer['id']}, {organizer['name']})",
        f"  Buyer:     {users['buyer']['username']} / {users['buyer']['password']}",
        f"  Outsider:  {users['outsider']['username']} / {users['outsider']['password']}",
        f"  OAuth app: client_id={app['client_id']}  client_secret={app['client_secret']}",
        f"             redirect_uri={app['redirect_uri']}",
        f"  Events:    {data['events']}",
        "",
        "Try it (application token, then the organizer's events):",
        f"  TOKEN=$(curl -s -X POST {auth}/oauth/token -d grant_type=client_credentials"
        f" -d client_id={app['client_id']} -d client_secret={app['client_secret']}"
        " | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"access_token\"])')",
        f'  curl -s -H "Authorization: Bearer $TOKEN" {base}/organizers/{organizer["id"]}/events',
        "",
    ]
    return "\n".join(lines)
