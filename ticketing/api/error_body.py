"""The one shape of every error body under /api/public (CONTRACT §2), built here only.

`{"success": false, "error": <code>, "message": <sentence>, "fields"?: {...}, "ticket"?: {...}}`
"""

from .exceptions import ApplicationError, InvalidParameters


def error_body(code: str, message: str, **extra) -> dict:
    """An error body; `extra` adds fields (`fields`, `ticket`, or a scan's own)."""
    return {"success": False, "error": code, "message": message, **extra}


def application_error_body(exc: ApplicationError) -> dict:
    """The body of one of our errors, with what it carries rendered (`exc.extra`). Every 400
    names its fields; a fault of the whole request names none (`non_field_errors`)."""
    extra = exc.extra
    if exc.status_code == 400 and "fields" not in extra:
        extra = {**extra, "fields": request_level_fields(exc.message)}
    return error_body(exc.code, exc.message, **extra)


def invalid_parameters_body(fields: dict) -> dict:
    """The 400 of input that failed validation, its message naming the first fault."""
    return error_body(InvalidParameters.code, _fields_message(fields), fields=fields)


def request_level_fields(message: str) -> dict:
    """Every 400 carries `fields` (CONTRACT §2); a fault of the whole request names no field."""
    return {"non_field_errors": [message]}


def flatten_field_errors(detail) -> dict:
    """DRF nests errors per field; the contract wants `{"field": ["message", ...]}`."""
    if isinstance(detail, dict):
        fields = {}
        for name, errors in detail.items():
            if isinstance(errors, dict):
                for sub, value in flatten_field_errors(errors).items():
                    fields[f"{name}.{sub}"] = value
            elif isinstance(errors, list):
                fields[name] = [str(e) for e in errors if not isinstance(e, dict | list)] or [
                    str(errors)
                ]
            else:
                fields[name] = [str(errors)]
        return fields
    if isinstance(detail, list):
        return {"non_field_errors": [str(e) for e in detail]}
    return {"non_field_errors": [str(detail)]}


def _fields_message(fields: dict) -> str:
    name, errors = next(iter(fields.items()))
    label = "Request" if name == "non_field_errors" else f"Parameter '{name}'"
    return f"{label}: {errors[0]}" if errors else "Some parameters are invalid."
