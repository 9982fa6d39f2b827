"""`manage.py task_queue`: the background queue's state, for operators and monitoring."""

import json

from django.core.management.base import BaseCommand

from ticketing.task_queue import task_queue_status


class Command(BaseCommand):
    help = (
        "Report the background task queue: pending tasks and the age of the oldest, "
        "scheduled retries, running and failed tasks."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--json", action="store_true", dest="as_json", help="One JSON object on stdout."
        )

    def handle(self, *args, as_json: bool = False, **options):
        status = task_queue_status()
        if as_json:
            self.stdout.write(json.dumps(status.as_dict()))
            return
        age = status.oldest_pending_seconds
        self.stdout.write(
            f"pending: {status.pending} (oldest waiting "
            f"{'-' if age is None else f'{age:.1f} s'})\n"
            f"scheduled: {status.scheduled}\n"
            f"running: {status.running}\n"
            f"failed: {status.failed}"
        )
