"""The writes on tickets and their orders, one module per use case.

`issuing` creates tickets (the API, the import command), `gate` checks them in and renews them
(the rules themselves are declared in `tickets.rules`), `revoking` revokes tickets and cancels
orders. `importing` issues tickets from CSV rows in batches with `issuing`'s checks
(`csv_input` reads the file, `import_upload` runs the admin's preview and import), `exporting`
streams CSV. `common` holds what they share; `publishing` records their webhook events, in their
transactions.
"""
