"""Orders: tickets inline, cancel through `order_cancel`. Applications: created through
`application_create`, secret shown once."""

import pytest
from django.contrib.auth.hashers import check_password
from django.urls import reverse

from events.models import TicketType
from oauth_setup.models import Application
from tests.admin.helpers import change_form_data, changelist_column, field_cells, messages_of
from tests.factories import OrderFactory, TicketFactory, UserFactory
from tickets.models import Order, Ticket


@pytest.mark.django_db
def test_order_page_lists_its_tickets(staff_client, world_a):
    page = staff_client.get(reverse("admin:tickets_order_change", args=[world_a.order.pk]))

    tickets = next(f for f in page.context["inline_admin_formsets"] if f.formset.model is Ticket)
    assert [t.reference_code for t in tickets.formset.queryset] == ["ACODE01", "AUSED01"]


@pytest.mark.django_db
def test_buyer_column_shows_the_name_and_any_linked_account(staff_client, world_a):
    Order.objects.filter(pk=world_a.order.pk).update(
        buyer_firstname="Malee", buyer_lastname="Jaidee"
    )
    OrderFactory(
        event=world_a.event,
        buyer_firstname="Somchai",
        buyer_lastname="Dee",
        buyer=UserFactory(username="somchai"),
    )

    response = staff_client.get(reverse("admin:tickets_order_changelist"))

    assert changelist_column(response, "buyer") == [  # newest first
        "Somchai Dee (account somchai)",
        "Malee Jaidee",
    ]


@pytest.mark.django_db
def test_order_page_shows_each_ticket_holder(staff_client, world_a):
    Ticket.objects.filter(pk=world_a.ticket.pk).update(firstname="Malee", lastname="Jaidee")
    Ticket.objects.filter(pk=world_a.used.pk).update(
        firstname="Somchai", lastname="Dee", holder=UserFactory(username="somchai")
    )

    page = staff_client.get(reverse("admin:tickets_order_change", args=[world_a.order.pk]))

    assert field_cells(page, "holder_with_account") == [
        "Malee Jaidee",
        "Somchai Dee (account somchai)",
    ]


@pytest.mark.django_db
def test_cancel_order_confirms_then_revokes_tickets_through_the_service(admin_client_a, world_a):
    order = OrderFactory(event=world_a.event)
    tickets = TicketFactory.create_batch(
        2, event=world_a.event, ticket_type=world_a.ticket_type, order=order
    )
    sold_before = TicketType.objects.get(pk=world_a.ticket_type.pk).sold_count
    url = reverse("admin:tickets_order_changelist")

    confirm = admin_client_a.post(
        url, {"action": "cancel_orders", "_selected_action": [order.pk], "index": 0}
    )
    assert confirm.templates[0].name == "admin/action_form.html"
    order.refresh_from_db()
    assert order.status == Order.Status.PAID

    done = admin_client_a.post(
        url,
        {"action": "cancel_orders", "_selected_action": [order.pk, world_a.order.pk], "apply": "1"},
        follow=True,
    )

    order.refresh_from_db()
    assert order.status == Order.Status.CANCELLED
    assert {t.status for t in Ticket.objects.filter(order=order)} == {"revoked"}
    assert TicketType.objects.get(pk=world_a.ticket_type.pk).sold_count == sold_before - 2
    assert len(tickets) == 2
    assert messages_of(done) == [
        "Cancelled 1 order.",
        f"1 not done: Order #{world_a.order.pk}: Ticket AUSED01 of this order is checked in; "
        "renew it before cancelling the order.",
    ]
    world_a.order.refresh_from_db()
    assert world_a.order.status == Order.Status.PAID


@pytest.mark.django_db
def test_staff_cannot_cancel_orders(staff_client, world_a):
    order = OrderFactory(event=world_a.event)

    response = staff_client.post(
        reverse("admin:tickets_order_changelist"),
        {"action": "cancel_orders", "_selected_action": [order.pk], "apply": "1"},
    )

    order.refresh_from_db()
    assert order.status == Order.Status.PAID
    # Staff are offered no order action at all: Django shows the list again and runs nothing.
    assert response.status_code == 200
    assert response.context["action_form"] is None


@pytest.mark.django_db
def test_order_buyer_name_is_editable_but_status_is_not(admin_client_a, world_a):
    url = reverse("admin:tickets_order_change", args=[world_a.order.pk])
    page = admin_client_a.get(url)
    data = change_form_data(page)
    data.update({"buyer_firstname": "Anong", "status": "cancelled"})

    response = admin_client_a.post(url, data)

    assert set(page.context["adminform"].form.fields) == {
        "buyer_firstname",
        "buyer_lastname",
        "buyer_email",
    }
    assert response.status_code == 302
    world_a.order.refresh_from_db()
    assert (world_a.order.buyer_firstname, world_a.order.status) == ("Anong", "paid")


@pytest.mark.django_db
def test_order_search_by_number_and_email(staff_client, world_a):
    url = reverse("admin:tickets_order_changelist")

    by_id = staff_client.get(url, {"q": str(world_a.order.pk)}).context["cl"].result_list
    by_mail = staff_client.get(url, {"q": "a-buyer@"}).context["cl"].result_list
    by_text = staff_client.get(url, {"q": "nobody-matches"}).context["cl"].result_list

    assert [o.pk for o in by_id] == [world_a.order.pk]
    assert [o.pk for o in by_mail] == [world_a.order.pk]
    assert list(by_text) == []


def _application_post(organizer_id, **overrides):
    data = {
        "name": "Door scanner",
        "organizer": organizer_id,
        "client_type": "confidential",
        "authorization_grant_type": "authorization-code",
        "allow_client_credentials": "on",
        "redirect_uris": "https://scanner.example.com/callback",
        "post_logout_redirect_uris": "",
        "allowed_origins": "",
    }
    data.update(overrides)
    return data


@pytest.mark.django_db
def test_application_created_with_secret_shown_once(admin_client_a, world_a):
    response = admin_client_a.post(
        reverse("admin:oauth_setup_application_add"),
        _application_post(world_a.organizer.pk),
        follow=True,
    )

    application = Application.objects.get(name="Door scanner")
    [notice] = [m for m in messages_of(response) if "Client secret" in m]
    secret = notice.split(": ", 1)[1].split(" — ")[0]
    assert (application.organizer_id, application.allow_client_credentials) == (
        world_a.organizer.pk,
        True,
    )
    assert application.client_secret != secret
    assert check_password(secret, application.client_secret)
    page = admin_client_a.get(
        reverse("admin:oauth_setup_application_change", args=[application.pk])
    )
    assert secret not in page.content.decode()
    assert "client_secret" not in page.context["adminform"].form.fields


@pytest.mark.django_db
def test_application_service_error_becomes_a_message(admin_client_a, world_a):
    response = admin_client_a.post(
        reverse("admin:oauth_setup_application_add"),
        _application_post(world_a.organizer.pk, client_type="public"),
        follow=True,
    )

    assert not Application.objects.filter(name="Door scanner").exists()
    assert messages_of(response) == [
        "A public client has no secret, so it cannot use client credentials."
    ]


@pytest.mark.django_db
def test_application_grant_choices_are_the_supported_ones(admin_client_a, world_a):
    page = admin_client_a.get(reverse("admin:oauth_setup_application_add"))

    choices = page.context["adminform"].form.fields["authorization_grant_type"].choices
    assert [value for value, _ in choices] == ["authorization-code", "client-credentials"]


@pytest.mark.django_db
def test_regenerate_secret_replaces_it(admin_client_a, world_a):
    old_hash = world_a.application.client_secret

    response = admin_client_a.post(
        reverse("admin:oauth_setup_application_changelist"),
        {"action": "regenerate_secret", "_selected_action": [world_a.application.pk], "index": 0},
        follow=True,
    )

    world_a.application.refresh_from_db()
    [notice] = [m for m in messages_of(response) if "Client secret" in m]
    secret = notice.split(": ", 1)[1].split(" — ")[0]
    assert world_a.application.client_secret != old_hash
    assert check_password(secret, world_a.application.client_secret)


@pytest.mark.django_db
@pytest.mark.parametrize("field", ["buyer_firstname", "buyer_lastname"])
def test_order_form_refuses_a_control_character_in_a_buyer_name(admin_client_a, world_a, field):
    url = reverse("admin:tickets_order_change", args=[world_a.order.pk])
    data = change_form_data(admin_client_a.get(url))
    before = data[field]
    data[field] = "Anong\u2028Bcc"

    response = admin_client_a.post(url, data)

    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {
        field: ["Must not contain control, invisible or text-direction characters, or line breaks."]
    }
    world_a.order.refresh_from_db()
    assert getattr(world_a.order, field) == before
