from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class TicketsConfig(AppConfig):
    default_auto_field = "django.db.models.AutoField"
    name = "tickets"
    verbose_name = _("Tickets and check-in")

    # What `manage.py run_worker` runs for a worker taking this queue: beside its tasks, the
    # relay of the email outbox (`email_outbox`), which queues the emails asked for.
    task_queue = "email"

    def ready(self) -> None:
        from webhooks.models import WebhookEvent
        from webhooks.renderers import renderer_register

        from .services.publishing import ticket_row_render

        # The events this app's statements record (the API's creation, the gate's admission)
        # carry the ticket's row, not its data: rendered at their dispatch. Every `ticket.*`
        # type's data is the API's Ticket, so one renderer serves them all.
        Type = WebhookEvent.Type
        ticket_types = [Type.TICKET_CREATED, Type.TICKET_CHECKED_IN, Type.TICKET_RENEWED]
        renderer_register(types=[*ticket_types, Type.TICKET_REVOKED], render=ticket_row_render)

    def task_worker_threads(self) -> int:
        return 1  # a hung mail server holds this queue's worker only (EMAIL_TIMEOUT per try)

    def task_worker_loop(self, *, stop) -> None:
        from django.conf import settings

        from .email_outbox import ticket_email_relay_forever

        ticket_email_relay_forever(poll_seconds=settings.EMAIL_OUTBOX_POLL_MS / 1000, stop=stop)
