"""`manage.py prune_webhook_events`: delete finished webhook events past their retention, with
their deliveries and attempts (`manage.py prune` runs it daily)."""

from datetime import timedelta

from django.conf import settings
from django.core.management.base import BaseCommand
from django.utils import timezone

from webhooks.pruning import webhook_events_prune


class Command(BaseCommand):
    help = (
        "Delete webhook events whose deliveries have all been finished and unchanged for "
        "WEBHOOK_EVENT_RETENTION_DAYS, with those deliveries and their attempts, in batches."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--days",
            type=int,
            default=None,
            help="Keep events this many days (default: WEBHOOK_EVENT_RETENTION_DAYS)",
        )
        parser.add_argument("--batch-size", type=int, default=500, help="Events per transaction")

    def handle(self, *args, days, batch_size, **options):
        days = settings.WEBHOOK_EVENT_RETENTION_DAYS if days is None else days
        pruned = webhook_events_prune(
            older_than=timezone.now() - timedelta(days=days), batch_size=batch_size
        )
        if options["verbosity"] >= 1:
            self.stdout.write(
                f"Deleted {pruned.events} webhook events, {pruned.deliveries} deliveries and "
                f"{pruned.attempts} attempts older than {days} days."
            )
