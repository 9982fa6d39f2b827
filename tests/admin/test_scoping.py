"""Every admin model is scoped to the user's organizers: rows, pages, choices and actions."""

import pytest
from django.test import Client
from django.urls import reverse

from events.models import Event
from oauth_setup.models import Application
from tests.factories import MembershipFactory, UserFactory
from tickets.models import Order, Ticket

# (admin url prefix, attribute of the world fixture)
MODELS = [
    ("organizers_organizer", "organizer"),
    ("events_event", "event"),
    ("events_tickettype", "ticket_type"),
    ("tickets_ticket", "ticket"),
    ("checkin_checkinlog", "log"),
    ("tickets_order", "order"),
    ("oauth_setup_application", "application"),
]


def _change_url(url_name, obj):
    return reverse(f"admin:{url_name}_change", args=[obj.pk])


@pytest.mark.django_db
@pytest.mark.parametrize(("url_name", "attr"), MODELS)
def test_changelist_shows_only_own_organizers_rows(staff_client, world_a, world_b, url_name, attr):
    response = staff_client.get(reverse(f"admin:{url_name}_changelist"))

    assert response.status_code == 200
    body = response.content.decode()
    assert _change_url(url_name, getattr(world_a, attr)) in body
    assert _change_url(url_name, getattr(world_b, attr)) not in body


@pytest.mark.django_db
@pytest.mark.parametrize(("url_name", "attr"), MODELS)
def test_change_page_of_own_organizer_is_200(staff_client, world_a, world_b, url_name, attr):
    response = staff_client.get(_change_url(url_name, getattr(world_a, attr)))

    assert response.status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize(("url_name", "attr"), MODELS)
@pytest.mark.parametrize("page", ["change", "history", "delete"])
def test_pages_of_another_organizers_object_are_404(
    staff_client, admin_client_a, world_a, world_b, url_name, attr, page
):
    obj = getattr(world_b, attr)
    url = reverse(f"admin:{url_name}_{page}", args=[obj.pk])

    assert staff_client.get(url).status_code == 404
    assert admin_client_a.get(url).status_code == 404
    assert admin_client_a.post(url, {"post": "yes"}).status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize(("url_name", "attr"), MODELS)
def test_superuser_sees_every_organizer(super_client, world_a, world_b, url_name, attr):
    body = super_client.get(reverse(f"admin:{url_name}_changelist")).content.decode()

    assert _change_url(url_name, getattr(world_a, attr)) in body
    assert _change_url(url_name, getattr(world_b, attr)) in body


@pytest.mark.django_db
def test_missing_id_is_the_same_404(staff_client, world_a):
    assert staff_client.get(reverse("admin:events_event_change", args=[999999])).status_code == 404


@pytest.mark.django_db
def test_event_add_form_offers_only_managed_organizers(admin_client_a, world_a, world_b):
    response = admin_client_a.get(reverse("admin:events_event_add"))

    assert response.status_code == 200
    choices = {str(pk) for pk, _ in response.context["adminform"].form.fields["organizer"].choices}
    assert choices == {"", str(world_a.organizer.pk)}


@pytest.mark.django_db
def test_event_cannot_be_added_to_another_organizer(admin_client_a, world_a, world_b):
    response = admin_client_a.post(
        reverse("admin:events_event_add"),
        {
            "organizer": world_b.organizer.pk,
            "title": "Sneaky",
            "start_at_0": "2030-01-01",
            "start_at_1": "10:00",
            "end_at_0": "2030-01-01",
            "end_at_1": "12:00",
            **_empty_inlines(),
        },
    )

    assert response.status_code == 200
    assert "organizer" in response.context["adminform"].form.errors
    assert not Event.objects.filter(title="Sneaky").exists()


def _empty_inlines():
    data = {}
    for prefix in ("ticket_types", "check_in_types", "form_fields"):
        data.update(
            {
                f"{prefix}-TOTAL_FORMS": "0",
                f"{prefix}-INITIAL_FORMS": "0",
                f"{prefix}-MIN_NUM_FORMS": "0",
                f"{prefix}-MAX_NUM_FORMS": "1000",
            }
        )
    return data


@pytest.mark.django_db
def test_application_add_form_offers_only_managed_organizers(admin_client_a, world_a, world_b):
    response = admin_client_a.get(reverse("admin:oauth_setup_application_add"))

    field = response.context["adminform"].form.fields["organizer"]
    assert {str(pk) for pk, _ in field.choices} == {str(world_a.organizer.pk)}
    assert field.required


@pytest.mark.django_db
def test_ticket_filters_offer_only_own_events_and_types(staff_client, world_a, world_b):
    response = staff_client.get(reverse("admin:tickets_ticket_changelist"))

    filters = {spec.title: spec for spec in response.context["cl"].filter_specs}
    event_choices = dict(filters["event"].lookup_choices)
    type_choices = dict(filters["ticket type"].lookup_choices)
    assert event_choices == {str(world_a.event.pk): "A Festival"}
    assert set(type_choices) == {str(world_a.ticket_type.pk)}


@pytest.mark.django_db
def test_filtering_by_another_organizers_event_shows_nothing(staff_client, world_a, world_b):
    url = reverse("admin:tickets_ticket_changelist") + f"?event_id={world_b.event.pk}"

    response = staff_client.get(url)

    assert response.status_code == 200
    assert list(response.context["cl"].result_list) == []


@pytest.mark.django_db
def test_action_on_another_organizers_ticket_changes_nothing(staff_client, world_a, world_b):
    response = staff_client.post(
        reverse("admin:tickets_ticket_changelist"),
        {"action": "check_in", "_selected_action": [world_b.ticket.pk], "index": 0},
        follow=True,
    )

    assert response.status_code == 200
    world_b.ticket.refresh_from_db()
    assert world_b.ticket.status == Ticket.Status.ACTIVE
    assert [str(m) for m in response.context["messages"]] == ["Nothing to do."]


@pytest.mark.django_db
def test_cancel_action_on_another_organizers_order_changes_nothing(
    admin_client_a, world_a, world_b
):
    admin_client_a.post(
        reverse("admin:tickets_order_changelist"),
        {"action": "cancel_orders", "_selected_action": [world_b.order.pk], "apply": "1"},
    )

    world_b.order.refresh_from_db()
    assert world_b.order.status == Order.Status.PAID


@pytest.mark.django_db
def test_staff_role_views_but_cannot_change(staff_client, world_a):
    url = reverse("admin:events_event_change", args=[world_a.event.pk])

    page = staff_client.get(url)
    posted = staff_client.post(url, {"title": "Renamed"})

    assert page.status_code == 200
    assert page.context["has_change_permission"] is False
    assert 'name="_save"' not in page.content.decode()
    assert posted.status_code == 403
    world_a.event.refresh_from_db()
    assert world_a.event.title == "A Festival"


@pytest.mark.django_db
def test_staff_role_has_operating_actions_only(staff_client, admin_client_a, world_a):
    tickets = reverse("admin:tickets_ticket_changelist")
    orders = reverse("admin:tickets_order_changelist")

    staff_ticket_actions = {
        a for a, _ in staff_client.get(tickets).context["action_form"].fields["action"].choices
    }
    staff_order_page = staff_client.get(orders)
    admin_order_actions = {
        a for a, _ in admin_client_a.get(orders).context["action_form"].fields["action"].choices
    }

    assert staff_ticket_actions == {
        "",
        "check_in",
        "undo_check_in",
        "revoke",
        "resend_email",
        "export_csv",
        "export_xlsx",
    }
    assert staff_order_page.context["action_form"] is None
    assert admin_order_actions == {"", "cancel_orders"}


@pytest.mark.django_db
def test_staff_cannot_add_events_or_applications(staff_client, world_a):
    assert staff_client.get(reverse("admin:events_event_add")).status_code == 403
    assert staff_client.get(reverse("admin:oauth_setup_application_add")).status_code == 403


@pytest.mark.django_db
def test_admin_role_of_a_is_only_staff_elsewhere(world_a, world_b):
    """Admin of A, staff of B: may change A's event, only view B's."""
    user = UserFactory(username="mixed", is_staff=True)
    MembershipFactory(user=user, organizer=world_a.organizer, role="admin")
    MembershipFactory(user=user, organizer=world_b.organizer, role="staff")
    client = Client()
    client.force_login(user)

    a_page = client.get(reverse("admin:events_event_change", args=[world_a.event.pk]))
    b_page = client.get(reverse("admin:events_event_change", args=[world_b.event.pk]))
    b_post = client.post(reverse("admin:events_event_change", args=[world_b.event.pk]), {})

    assert a_page.context["has_change_permission"] is True
    assert b_page.context["has_change_permission"] is False
    assert b_post.status_code == 403


@pytest.mark.django_db
def test_member_without_is_staff_cannot_log_in(world_a):
    user = UserFactory(username="not-staff", is_staff=False)
    MembershipFactory(user=user, organizer=world_a.organizer, role="owner")
    client = Client()
    client.force_login(user)

    response = client.get(reverse("admin:events_event_changelist"))

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


@pytest.mark.django_db
def test_staff_user_without_membership_sees_no_models(world_a):
    user = UserFactory(username="lonely", is_staff=True)
    client = Client()
    client.force_login(user)

    index = client.get(reverse("admin:index"))

    assert index.status_code == 200
    assert index.context["app_list"] == []
    assert client.get(reverse("admin:tickets_ticket_changelist")).status_code == 403


@pytest.mark.django_db
def test_member_index_lists_the_organizer_models_but_not_accounts(staff_client, world_a):
    index = staff_client.get(reverse("admin:index"))

    models = {m["object_name"] for app in index.context["app_list"] for m in app["models"]}
    assert models == {
        "Organizer",
        "Event",
        "TicketType",
        "Ticket",
        "CheckInLog",
        "ScanRecord",
        "Order",
        "Application",
    }


@pytest.mark.django_db
def test_platform_application_is_hidden_from_members(staff_client, world_a):
    from tests.factories import ApplicationFactory

    platform = ApplicationFactory(organizer=None, name="Platform")

    url = reverse("admin:oauth_setup_application_change", args=[platform.pk])
    assert staff_client.get(url).status_code == 404
    assert Application.objects.count() == 2
