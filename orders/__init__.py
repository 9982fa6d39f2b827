"""Holds the migration history of the Order model, which now lives in `tickets`."""
