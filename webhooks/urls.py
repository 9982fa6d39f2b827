from django.urls import path

from . import views

urlpatterns = [
    path("organizers/<int:organizer_id>/webhooks", views.WebhooksView.as_view(), name="webhooks"),
    path(
        "organizers/<int:organizer_id>/webhooks/<int:webhook_id>",
        views.WebhookView.as_view(),
        name="webhook",
    ),
    path(
        "organizers/<int:organizer_id>/webhooks/<int:webhook_id>/test",
        views.WebhookTestView.as_view(),
        name="webhook-test",
    ),
]
