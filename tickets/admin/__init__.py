"""The admin of tickets, orders and the check-in log: one module per page, each registering
its `ModelAdmin`; `forms` holds their forms and inlines."""

from . import orders, tickets  # noqa: F401 (registers the pages)
