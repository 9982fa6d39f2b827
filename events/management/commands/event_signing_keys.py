"""`manage.py event_signing_keys --event N`: list, rotate or retire an event's signing keys
(CONTRACT §14), through the same services as the admin."""

from django.core.management.base import BaseCommand, CommandError

from events.models import EventSigningKey
from events.signing_keys import (
    b64url,
    event_signing_key_retire,
    event_signing_key_rotate,
    event_signing_keys_live,
)
from ticketing.api.exceptions import ApplicationError


class Command(BaseCommand):
    help = (
        "List an event's signing keys (default), make a new active key (--rotate: older keys "
        "keep verifying the codes they signed), or retire one (--retire KEY_ID: its codes "
        "become unknown codes at once)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--event", type=int, required=True, help="The event's id.")
        action = parser.add_mutually_exclusive_group()
        action.add_argument("--list", action="store_true", help="List the keys (the default).")
        action.add_argument("--rotate", action="store_true", help="Make a new active key.")
        action.add_argument("--retire", metavar="KEY_ID", help="Retire this key.")

    def handle(self, *args, event, rotate, retire, **options):
        try:
            if rotate:
                key = event_signing_key_rotate(event_id=event)
                self.stdout.write(f"New active key {key.key_id}.")
            elif retire:
                key = event_signing_key_retire(event_id=event, key_id=retire)
                self.stdout.write(f"Retired key {key.key_id}.")
        except ApplicationError as exc:
            raise CommandError(exc.message) from None
        live = list(event_signing_keys_live(event_id=event).values_list("pk", flat=True)[:1])
        for key in EventSigningKey.objects.filter(event_id=event).order_by("-id"):
            state = "retired" if key.retired_at else ("active" if [key.pk] == live else "valid")
            self.stdout.write(
                f"{key.key_id}\t{state}\t{key.created_at:%Y-%m-%d %H:%M}\t"
                f"{b64url(bytes(key.public_key))}"
            )
