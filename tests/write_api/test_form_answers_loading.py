"""What the selectors load of a ticket's form answers is what `TicketSerializer` reads: no query
while rendering, none at all for a ticket known to have no answers, and one per page of
tickets, however many have answers."""

import pytest
from django.db.models.sql.compiler import SQLCompiler

from tests.factories import FormFieldFactory, TicketFactory
from tickets.models import Ticket, TicketFormAnswer
from tickets.selectors import tickets_for_output, with_form_answers
from tickets.serializers import TicketSerializer

pytestmark = pytest.mark.django_db


def _fresh(ticket) -> Ticket:
    return Ticket.objects.select_related("ticket_type").get(pk=ticket.pk)


def test_a_ticket_without_answers_renders_without_compiling_a_query(
    ticket, django_assert_num_queries, monkeypatch
):
    loaded = with_form_answers(_fresh(ticket), has_answers=False)
    compiled = []
    real_execute_sql = SQLCompiler.execute_sql

    def execute_sql(self, *args, **kwargs):
        compiled.append(self.query.model)
        return real_execute_sql(self, *args, **kwargs)

    monkeypatch.setattr(SQLCompiler, "execute_sql", execute_sql)
    with django_assert_num_queries(0):
        assert TicketSerializer(loaded).data["forms"] == []
    assert compiled == []


def test_answers_loaded_with_the_ticket_render_without_a_query(event, django_assert_num_queries):
    question, other = FormFieldFactory(event=event), FormFieldFactory(event=event)
    ticket = TicketFactory(event=event)
    TicketFormAnswer.objects.create(ticket=ticket, field=other, value="vegan")
    TicketFormAnswer.objects.create(ticket=ticket, field=question, value="L")
    loaded = _fresh(ticket)
    with django_assert_num_queries(1):
        with_form_answers(loaded)
    with django_assert_num_queries(0):
        forms = TicketSerializer(loaded).data["forms"]
    expected = sorted([(question, "L"), (other, "vegan")], key=lambda a: a[0].position)
    assert forms == [{"id": f.pk, "label": f.label, "value": v} for f, v in expected]


def test_a_page_loads_every_tickets_answers_in_one_query(event, django_assert_num_queries):
    question = FormFieldFactory(event=event)
    tickets = [TicketFactory(event=event) for _ in range(5)]
    for n, ticket in enumerate(tickets[:3]):
        TicketFormAnswer.objects.create(ticket=ticket, field=question, value=f"answer {n}")
    with django_assert_num_queries(2):  # the tickets with their types, then every answer
        page = list(tickets_for_output(Ticket.objects.filter(event=event)).order_by("pk"))
    with django_assert_num_queries(0):
        rendered = TicketSerializer(page, many=True).data
    assert [[a["value"] for a in t["forms"]] for t in rendered] == [
        ["answer 0"],
        ["answer 1"],
        ["answer 2"],
        [],
        [],
    ]


def test_a_ticket_loaded_otherwise_still_renders_its_answers(event):
    question = FormFieldFactory(event=event)
    ticket = TicketFactory(event=event)
    TicketFormAnswer.objects.create(ticket=ticket, field=question, value="L")
    assert TicketSerializer(_fresh(ticket)).data["forms"] == [
        {"id": question.pk, "label": question.label, "value": "L"}
    ]
