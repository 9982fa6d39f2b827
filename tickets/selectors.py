from django.db.models import Prefetch, QuerySet

from .models import Ticket, TicketFormAnswer


def tickets_for_output(queryset: QuerySet[Ticket] | None = None) -> QuerySet[Ticket]:
    """Tickets with everything `TicketSerializer` reads, in two queries whatever their number."""
    queryset = Ticket.objects.all() if queryset is None else queryset
    return queryset.select_related("ticket_type").prefetch_related(
        Prefetch("form_answers", queryset=TicketFormAnswer.objects.select_related("field"))
    )
