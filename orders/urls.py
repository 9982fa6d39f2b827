from django.urls import path

from . import views

urlpatterns = [
    path(
        "organizers/<int:organizer_id>/orders", views.UserOrdersView.as_view(), name="user-orders"
    ),
]
