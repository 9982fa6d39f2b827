"""The gate's admin: the check-in log, the scanners' uploaded scans, and the ticket admin's check-in
and undo actions and its check-in history (`inlines`)."""

from . import check_in_logs, scan_records, tickets  # noqa: F401 (registers the pages)
