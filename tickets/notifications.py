"""The holder's ticket email (CONTRACT §14): text and HTML, the QR code inline, a calendar file.

Run by the task `tickets.tasks.ticket_email_send` with an id, so it reads the committed ticket;
the task is enqueued in the issuing transaction and never runs for a creation that rolled back.

The QR code is a PNG part of a `multipart/related` body, shown by `<img src="cid:...">`: mail
clients display that, while many block `data:` images. The message is
`mixed[related[alternative[text, html], qr.png], ticket.ics, ticket.pdf]`. The organizer's
`email_language` picks the languages; with two, each text follows the other in one message.

It comes from `"<organizer> via <SITE_NAME>"` at the site's own address (the one its mail
server may send from), and replies go to the organizer's contact address: holders' questions
are the organizer's to answer. What Django's mail backend answered is kept (`TicketEmail`).
"""

import logging
from email.mime.application import MIMEApplication
from email.mime.image import MIMEImage
from email.mime.text import MIMEText
from email.utils import formataddr, parseaddr
from urllib.parse import urlsplit

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.core.mail.message import SafeMIMEMultipart
from django.template.loader import render_to_string
from django.utils import timezone, translation

from organizers.models import Organizer

from .calendar import ticket_ics
from .email_status import TicketEmail
from .event_times import event_when
from .links import ticket_page_url
from .models import Ticket
from .pdf import ticket_pdf
from .qr import qr_png
from .signed_codes import ticket_qr_data

logger = logging.getLogger(__name__)

EMAIL_LANGUAGES = {
    Organizer.EmailLanguage.THAI_ENGLISH: ("th", "en"),
    Organizer.EmailLanguage.THAI: ("th",),
    Organizer.EmailLanguage.ENGLISH: ("en",),
}
TEXT_SEPARATOR = "\n" + "-" * 40 + "\n\n"


class RelatedEmail(EmailMultiAlternatives):
    """An email whose HTML shows parts of its own (`related`, each with a Content-ID).

    Django builds `mixed[alternative, attachments]`; this wraps the alternative in a
    `multipart/related` with the inline parts, through the builder's `_create_message` hook
    (Django 5.2; `tests/attendee/test_email.py` checks the resulting structure).
    """

    def __init__(self, *args, related: list[MIMEImage], **kwargs):
        super().__init__(*args, **kwargs)
        self.related = related

    def _create_message(self, msg):
        body = self._create_alternatives(msg)
        if self.related:
            wrapper = SafeMIMEMultipart(
                _subtype="related", encoding=self.encoding or settings.DEFAULT_CHARSET
            )
            wrapper.attach(body)
            for part in self.related:
                wrapper.attach(part)
            body = wrapper
        return self._create_attachments(body)


def ticket_qr_content_id(ticket: Ticket) -> str:
    """Globally unique, as RFC 2392 asks: the ticket and the site's host."""
    return f"qr-{ticket.pk}@{urlsplit(settings.SITE_URL).hostname or 'localhost'}"


def _qr_part(ticket: Ticket) -> MIMEImage:
    part = MIMEImage(qr_png(ticket_qr_data(ticket)), "png")
    part.add_header("Content-ID", f"<{ticket_qr_content_id(ticket)}>")
    part.add_header("Content-Disposition", "inline", filename=f"{ticket.reference_code}.png")
    return part


def _ics_part(ticket: Ticket) -> MIMEText:
    part = MIMEText(ticket_ics(ticket).decode(), "calendar", "utf-8")
    part.set_param("method", "PUBLISH")
    part.add_header("Content-Disposition", "attachment", filename=f"{ticket.reference_code}.ics")
    return part


def _pdf_part(ticket: Ticket, language: str) -> MIMEApplication:
    part = MIMEApplication(ticket_pdf(ticket, language=language).content(), "pdf")
    part.add_header("Content-Disposition", "attachment", filename=f"{ticket.reference_code}.pdf")
    return part


def ticket_email_sender(organizer: Organizer) -> str:
    """`"<organizer> via <site>" <address>`: the organizer's name, the site's own address."""
    address = parseaddr(settings.DEFAULT_FROM_EMAIL)[1] or settings.DEFAULT_FROM_EMAIL
    return formataddr((f"{organizer.name} via {settings.SITE_NAME}", address))


def _render(ticket: Ticket, languages: tuple[str, ...]) -> tuple[str, str, str]:
    """Subject, text and HTML: one section per language, in the order given."""
    event = ticket.event
    context = {
        "ticket": ticket,
        "event": event,
        "holder_name": ticket.holder_name,
        "reference_code": ticket.reference_code,
        "ticket_type_name": ticket.ticket_type.name,
        "organizer": event.organizer,
        "place": event.display_location_name,
        "time_zone": timezone.get_current_timezone_name(),
        "ticket_url": ticket_page_url(ticket),
    }
    subjects, texts, sections = [], [], []
    for language in languages:
        with translation.override(language):
            context["language"] = language
            context["when"] = event_when(event.start_at, event.end_at, "long")
            subject = render_to_string("tickets/email/ticket_subject.txt", context)
            subjects.append(" ".join(subject.split()))  # a header is one line
            texts.append(render_to_string("tickets/email/ticket.txt", context).strip() + "\n")
            sections.append(render_to_string("tickets/email/ticket_section.html", context))
    subject = " / ".join(subjects)
    html = render_to_string(
        "tickets/email/ticket.html",
        {
            **context,
            "language": languages[0],
            "subject": subject,
            "sections": sections,
            "qr_cid": ticket_qr_content_id(ticket),
        },
    )
    return subject, TEXT_SEPARATOR.join(texts), html


def ticket_email_record(
    ticket: Ticket, status: str, *, attempt: int = 1, error: BaseException | None = None
) -> None:
    """Keep the outcome of the latest attempt, for the admin's ticket page."""
    TicketEmail.objects.update_or_create(
        ticket=ticket,
        defaults={
            "status": status,
            "attempts": attempt,
            "recipient": ticket.email,
            "error": "" if error is None else repr(error)[:500],
            "at": timezone.now(),
        },
    )


def ticket_email_send(*, ticket_id: int, attempt: int = 1, final: bool = True) -> None:
    """Send the ticket to its holder. A ticket gone or without email is skipped, not an error.

    The backend's outcome is recorded: sent, or the exception it raised (re-raised for the task
    to retry; `final` says whether it will).
    """
    ticket = (
        Ticket.objects.select_related("event__organizer", "ticket_type")
        .filter(pk=ticket_id)
        .first()
    )
    if ticket is None or not ticket.email:
        logger.warning("ticket email skipped: ticket %s missing or without email", ticket_id)
        return
    organizer = ticket.event.organizer
    languages = EMAIL_LANGUAGES.get(organizer.email_language, ("th", "en"))
    subject, text, html = _render(ticket, languages)
    message = RelatedEmail(
        subject=subject,
        body=text,
        from_email=ticket_email_sender(organizer),
        to=[ticket.email],
        reply_to=[organizer.contact_email] if organizer.contact_email else None,
        related=[_qr_part(ticket)],
    )
    message.attach_alternative(html, "text/html")
    message.attach(_ics_part(ticket))
    message.attach(_pdf_part(ticket, languages[0]))
    try:
        message.send()
    except Exception as exc:
        status = TicketEmail.Status.FAILED if final else TicketEmail.Status.RETRYING
        ticket_email_record(ticket, status, attempt=attempt, error=exc)
        raise
    ticket_email_record(ticket, TicketEmail.Status.SENT, attempt=attempt)
    logger.info("ticket email sent for ticket %s", ticket_id)
