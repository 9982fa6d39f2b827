"""`manage.py create_application --name "Gate app" --organizer bangkok-live
--redirect-uri https://gate.example.com/callback --grant authorization-code --client-credentials`
"""

import json

from django.core.management.base import BaseCommand, CommandError

from oauth_setup.services import GRANT_TYPES, application_create
from organizers.models import Organizer
from ticketing.api.exceptions import ApplicationError
from ticketing.api.fields import INT32_MAX


class Command(BaseCommand):
    help = (
        "Register an OAuth application and print its client id and secret. The secret is "
        "stored hashed: this is the only time it is shown."
    )

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True)
        parser.add_argument(
            "--organizer",
            required=True,
            help="Owner: organizer id or slug, or 'none' for a platform application.",
        )
        parser.add_argument(
            "--redirect-uri",
            action="append",
            default=[],
            dest="redirect_uris",
            help="Registered callback URL (repeat for several). Needed for authorization-code.",
        )
        parser.add_argument("--grant", required=True, choices=sorted(GRANT_TYPES))
        parser.add_argument(
            "--client-credentials",
            action="store_true",
            help="Let an authorization-code application also use client credentials.",
        )
        parser.add_argument(
            "--public",
            action="store_true",
            help="A public client (mobile/browser app): no secret, PKCE required.",
        )
        parser.add_argument(
            "--skip-authorization",
            action="store_true",
            help="Trusted first-party application: no consent page.",
        )
        parser.add_argument("--json", action="store_true", help="Print one JSON object.")

    def handle(self, *args, **options):
        organizer = _organizer(options["organizer"])
        try:
            created = application_create(
                name=options["name"],
                organizer=organizer,
                grant_type=options["grant"],
                redirect_uris=options["redirect_uris"],
                allow_client_credentials=options["client_credentials"],
                public=options["public"],
                skip_authorization=options["skip_authorization"],
            )
        except ApplicationError as exc:
            raise CommandError(exc.message) from None
        application = created.application
        if options["json"]:
            self.stdout.write(
                json.dumps(
                    {
                        "id": application.id,
                        "name": application.name,
                        "organizer_id": application.organizer_id,
                        "client_id": application.client_id,
                        "client_secret": created.client_secret,
                        "client_type": application.client_type,
                        "grant_type": application.authorization_grant_type,
                        "client_credentials": application.allows_grant_type(
                            application.GRANT_CLIENT_CREDENTIALS
                        ),
                        "redirect_uris": application.redirect_uris.split(),
                    }
                )
            )
            return
        owner = organizer.name if organizer else "none (platform application)"
        self.stdout.write(f"Created application {application.id}: {application.name}")
        self.stdout.write(f"Organizer:     {owner}")
        self.stdout.write(f"client_id:     {application.client_id}")
        if created.client_secret is None:
            self.stdout.write("client_secret: none (public client: use PKCE)")
        else:
            self.stdout.write(f"client_secret: {created.client_secret}")
            self.stdout.write(
                self.style.WARNING("Store the secret now: it is kept hashed, never shown again.")
            )


def _organizer(value: str) -> Organizer | None:
    if value.strip().lower() == "none":
        return None
    lookup = {"pk": int(value)} if value.isascii() and value.isdigit() else {"slug": value}
    if lookup.get("pk", 0) > INT32_MAX:
        raise CommandError(f"No organizer {value!r}.")
    organizer = Organizer.objects.filter(**lookup).first()
    if organizer is None:
        raise CommandError(f"No organizer {value!r} (give its id or slug, or 'none').")
    return organizer
