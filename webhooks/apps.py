from django.apps import AppConfig
from django.conf import settings
from django.utils.translation import gettext_lazy as _


class WebhooksConfig(AppConfig):
    name = "webhooks"
    verbose_name = _("Webhooks")

    # What `manage.py run_worker` runs for a worker taking this queue: that many tasks at once
    # (a hung receiver holds one thread, and at most its organizer's share: `delivering`), and
    # beside them the outbox's relay (`outbox`), which queues the dispatch of recorded events.
    task_queue = "webhooks"

    def ready(self) -> None:
        from . import tasks
        from .queueing import QUEUE

        QUEUE.provide(
            events_dispatch=tasks.webhook_events_dispatch,
            deliver=tasks.webhook_deliver,
            endpoint_disabled_email=tasks.webhook_endpoint_disabled_email,
        )

    def task_worker_threads(self) -> int:
        return settings.WEBHOOK_WORKER_THREADS

    def task_worker_loop(self, *, stop) -> None:
        from .outbox import webhook_outbox_relay_forever

        webhook_outbox_relay_forever(poll_seconds=settings.WEBHOOK_OUTBOX_POLL_MS / 1000, stop=stop)
