"""The ticket page's routes, mounted at `/t/` by the root URLconf (`services.pages` builds them)."""

from django.urls import path

from . import page_views

urlpatterns = [
    path("<str:token>", page_views.ticket_page, name="ticket-page"),
    path("<str:token>/qr.svg", page_views.ticket_qr_svg, name="ticket-page-qr-svg"),
    path("<str:token>/qr.png", page_views.ticket_qr_png, name="ticket-page-qr-png"),
]
