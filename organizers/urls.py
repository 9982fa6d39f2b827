from django.urls import path

from . import views

urlpatterns = [
    path("organizers", views.OrganizersView.as_view(), name="organizers"),
]
