from django.db.models import Prefetch, QuerySet

from tickets.models import Ticket
from tickets.selectors import orders_of_user

from .models import Order, OrderFormAnswer


def orders_for_output(queryset: QuerySet[Order]) -> QuerySet[Order]:
    """Orders with everything `OrderSerializer` reads, in three queries whatever their number."""
    return queryset.prefetch_related(
        Prefetch("form_answers", queryset=OrderFormAnswer.objects.select_related("field")),
        Prefetch("tickets", queryset=Ticket.objects.only("id", "order_id").order_by("id")),
    )


def user_orders_for_organizer(*, user, organizer_id: int) -> QuerySet[Order]:
    """The user's orders (CONTRACT §8) for events of one organizer."""
    return orders_for_output(orders_of_user(user=user).filter(event__organizer_id=organizer_id))
