"""The answers to an event's custom questions show, read-only, on the ticket and order pages."""

import pytest
from django.urls import reverse

from tests.factories import FormFieldFactory

pytestmark = pytest.mark.django_db


def test_ticket_and_order_pages_show_their_form_answers(staff_client, world_a):
    shirt = FormFieldFactory(event=world_a.event, label="T-shirt size", applies_to="ticket")
    company = FormFieldFactory(event=world_a.event, label="Company name", applies_to="order")
    world_a.ticket.form_answers.create(field=shirt, value="XL")
    world_a.order.form_answers.create(field=company, value="Siam <b>Widgets</b>")

    ticket_page = staff_client.get(reverse("admin:tickets_ticket_change", args=[world_a.ticket.pk]))
    order_page = staff_client.get(reverse("admin:tickets_order_change", args=[world_a.order.pk]))

    assert ticket_page.status_code == order_page.status_code == 200
    ticket_html, order_html = ticket_page.content.decode(), order_page.content.decode()
    assert "T-shirt size" in ticket_html and "XL" in ticket_html
    assert "Company name" in order_html
    assert "Siam &lt;b&gt;Widgets&lt;/b&gt;" in order_html  # stored verbatim, shown escaped
    assert "Siam <b>Widgets</b>" not in order_html
