from django.urls import path

from . import page_views

app_name = "checkin_page"

urlpatterns = [
    path("", page_views.check_in_page, name="page"),
    path("token", page_views.page_token, name="token"),
    path("worker.js", page_views.service_worker, name="worker"),
    path("manifest.webmanifest", page_views.web_app_manifest, name="manifest"),
    path("last-check-in", page_views.last_check_in_view, name="last_check_in"),
]
