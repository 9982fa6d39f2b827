"""`with_form_answers` writes Django's private prefetch cache by hand for a ticket known to have
no form answers (the check-in path's shortcut). These tests fail if an upgrade of Django changes
what that relies on: the cache's key and shape, and that the related manager then reads it
without compiling or running a query."""

import pytest
from django.db.models import Prefetch, prefetch_related_objects
from django.db.models.sql.compiler import SQLCompiler

from tickets.models import Ticket, TicketFormAnswer
from tickets.selectors import with_form_answers
from tickets.serializers import TicketSerializer

pytestmark = pytest.mark.django_db


def _fresh(ticket) -> Ticket:
    return Ticket.objects.select_related("ticket_type").get(pk=ticket.pk)


def test_hand_written_cache_is_what_prefetch_leaves(ticket):
    prefetched = _fresh(ticket)
    answers = TicketFormAnswer.objects.select_related("field")
    prefetch_related_objects([prefetched], Prefetch("form_answers", queryset=answers))
    by_hand = with_form_answers(_fresh(ticket), has_answers=False)

    assert set(prefetched._prefetched_objects_cache) == {"form_answers"}
    assert set(by_hand._prefetched_objects_cache) == {"form_answers"}
    real, written = (t._prefetched_objects_cache["form_answers"] for t in (prefetched, by_hand))
    assert type(written) is type(real)
    assert written.model is real.model is TicketFormAnswer
    assert real._result_cache == written._result_cache == []
    assert real._prefetch_done is written._prefetch_done is True


def test_hand_written_cache_is_read_without_a_query(ticket, django_assert_num_queries, monkeypatch):
    by_hand = with_form_answers(_fresh(ticket), has_answers=False)
    compiled = []
    real_execute_sql = SQLCompiler.execute_sql

    def execute_sql(self, *args, **kwargs):
        compiled.append(self.query.model)
        return real_execute_sql(self, *args, **kwargs)

    monkeypatch.setattr(SQLCompiler, "execute_sql", execute_sql)
    with django_assert_num_queries(0):
        assert list(by_hand.form_answers.all()) == []
        assert TicketSerializer(by_hand).data["forms"] == []
    assert compiled == []  # not even the empty query `.none()` would compile
