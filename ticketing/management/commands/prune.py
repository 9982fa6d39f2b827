"""`manage.py prune`: the daily clean-up, every table that grows without end (deploy/README.md,
"Periodic jobs").

It runs, in turn: django-tasks-db's `prune_db_task_results` (finished task rows after
`TASK_RESULT_RETENTION_DAYS`, failed ones after `TASK_FAILED_RETENTION_DAYS`),
`prune_webhook_events` (after `WEBHOOK_EVENT_RETENTION_DAYS`), django-oauth-toolkit's
`cleartokens` and Django's `clearsessions`. Each is idempotent and may overlap a running
service; the project package names the apps' commands rather than importing the apps.
"""

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = (
        "Delete finished task rows, old webhook events with their deliveries and attempts, "
        "expired OAuth tokens and expired sessions. Run it daily."
    )

    def handle(self, *args, **options):
        output = {"verbosity": options["verbosity"], "stdout": self.stdout, "stderr": self.stderr}
        call_command(
            "prune_db_task_results",
            queue_name="*",
            min_age_days=settings.TASK_RESULT_RETENTION_DAYS,
            failed_min_age_days=settings.TASK_FAILED_RETENTION_DAYS,
            **output,
        )
        call_command("prune_webhook_events", **output)
        call_command("cleartokens", **output)
        call_command("clearsessions", **output)
