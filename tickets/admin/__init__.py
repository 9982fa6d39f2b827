"""The admin of tickets and orders: one module per page, each registering its `ModelAdmin`;
`forms` holds their forms and inlines. The check-in log's pages are the gate's (`checkin.admin`)."""

from . import orders, tickets  # noqa: F401 (registers the pages)
