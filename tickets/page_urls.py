"""The ticket page's routes, mounted at `/t/` by the root URLconf (`services.pages` builds them)."""

from django.urls import path

from . import page_views

urlpatterns = [
    path("<str:token>", page_views.ticket_page, name="ticket-page"),
    path("<str:token>/qr.svg", page_views.ticket_qr_svg, name="ticket-page-qr-svg"),
    path("<str:token>/qr.png", page_views.ticket_qr_png, name="ticket-page-qr-png"),
    path("<str:token>/ticket.pdf", page_views.ticket_pdf, name="ticket-page-pdf"),
    path("<str:token>/ticket.ics", page_views.ticket_calendar, name="ticket-page-ics"),
    path("<str:token>/ticket.pkpass", page_views.ticket_wallet_pass, name="ticket-page-pkpass"),
]
