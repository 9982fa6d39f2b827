from django.urls import path

from . import views

app_name = "checkin_page"

urlpatterns = [
    path("", views.check_in_page, name="page"),
    path("token", views.page_token, name="token"),
    path("worker.js", views.service_worker, name="worker"),
    path("last-check-in", views.last_check_in_view, name="last_check_in"),
]
