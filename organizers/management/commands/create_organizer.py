"""`manage.py create_organizer --name "Bangkok Live" --slug bangkok-live [--owner somchai]`."""

from django.core.management.base import BaseCommand, CommandError

from organizers.services import organizer_create
from ticketing.api.exceptions import ApplicationError


class Command(BaseCommand):
    help = "Create an organizer, optionally with an existing user as its owner."

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True, help="Display name.")
        parser.add_argument("--slug", required=True, help="Unique short name for URLs.")
        parser.add_argument("--description", default="", help="Optional description.")
        parser.add_argument("--owner", help="Username of an existing user to make owner.")

    def handle(self, *args, name, slug, description, owner, **options):
        try:
            organizer = organizer_create(
                name=name, slug=slug, description=description, owner_username=owner
            )
        except ApplicationError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(f"Created organizer {organizer.id} ({organizer.slug}): {organizer.name}")
        if owner:
            self.stdout.write(f"Owner: {owner}")
