"""The writes on tickets and their orders, one module per use case.

`issuing` creates tickets (the API, the import command), `revoking` revokes tickets and
cancels orders. `importing` issues tickets from CSV rows in batches with `issuing`'s checks
(`csv_input` reads the file, `import_upload` runs the admin's preview and import), `exporting`
streams CSV. `common` holds what they share; `publishing` records their webhook events, in their
transactions. The gate's check-in and renew are `checkin.services`.
"""
