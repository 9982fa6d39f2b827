"""`manage.py end_events`: mark active events whose end has passed as ended (cron-safe)."""

from django.core.management.base import BaseCommand

from events.services import event_end_past


class Command(BaseCommand):
    help = (
        "Mark every active event whose end_at has passed as ended. Idempotent and safe to run "
        "from cron: one conditional UPDATE, so overlapping runs cannot conflict."
    )

    def handle(self, *args, **options):
        count = event_end_past()
        if options["verbosity"] >= 1:
            self.stdout.write(f"Ended {count} event{'s' if count != 1 else ''}.")
