from django.urls import path

from . import views

urlpatterns = [
    path("me", views.MeView.as_view(), name="me"),
    path("info", views.InfoView.as_view(), name="info"),
]
