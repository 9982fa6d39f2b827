"""Reads of organizers, scoped to what a caller may act for."""

from django.db.models import CharField, OuterRef, QuerySet, Subquery, Value

from ticketing.api.caller import Caller

from .models import Membership, Organizer


def organizers_for_caller(*, caller: Caller) -> QuerySet[Organizer]:
    """The organizers the caller may act for, each annotated with `role` (CONTRACT §5).

    A user token: the user's memberships with their role; through an organizer's application
    only that organizer (any other would be `organizer_mismatch`), through a platform
    application all of them. An application token: its owner, `role` null; a platform
    application acts for no organizer by itself, so none.
    """
    application = caller.application
    if caller.is_user_token:
        role = Membership.objects.filter(organizer=OuterRef("pk"), user=caller.user).values("role")[
            :1
        ]
        queryset = Organizer.objects.annotate(role=Subquery(role)).filter(role__isnull=False)
        if application.organizer_id is not None:
            queryset = queryset.filter(pk=application.organizer_id)
        return queryset
    if application.organizer_id is None:
        return Organizer.objects.none()
    return Organizer.objects.filter(pk=application.organizer_id).annotate(
        role=Value(None, output_field=CharField())
    )
