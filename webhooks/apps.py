from django.apps import AppConfig
from django.conf import settings


class WebhooksConfig(AppConfig):
    name = "webhooks"
    verbose_name = "Webhooks"

    # What `manage.py run_worker` runs for a worker taking this queue: that many tasks at once
    # (a hung receiver holds one thread, and at most its organizer's share: `delivering`), and
    # beside them the outbox's relay (`outbox`), which queues the dispatch of recorded events.
    task_queue = "webhooks"

    def task_worker_threads(self) -> int:
        return settings.WEBHOOK_WORKER_THREADS

    def task_worker_loop(self, *, stop) -> None:
        from .outbox import webhook_outbox_relay_forever

        webhook_outbox_relay_forever(poll_seconds=settings.WEBHOOK_OUTBOX_POLL_MS / 1000, stop=stop)
