"""The one assertion every hostile-input case shares, and values beyond int32.

Every hostile request must end in a contract-shaped JSON error with the right status (CONTRACT
§2) or a correct success: never a 500, never a trace, never HTML.
"""

import json

from ticketing.api.exceptions import api_error_codes

BEYOND_INT32 = ["2147483648", "-2147483649", "99999999999999999999", "9" * 40]


def contract_error(response, status: int, code: str | None = None) -> dict:
    """Assert the response is the contract's error body with `status` (and `code`); return it."""
    assert response.status_code == status, (response.status_code, response.content[:300])
    assert response["Content-Type"] == "application/json", response["Content-Type"]
    body = json.loads(response.content)
    assert body["success"] is False
    assert body["error"] in api_error_codes()[status], body  # the codes of CONTRACT §2
    if code is not None:
        assert body["error"] == code, body
    assert isinstance(body["message"], str) and body["message"]
    assert "Traceback" not in body["message"] and "SELECT" not in body["message"]
    if status == 400:
        assert isinstance(body["fields"], dict) and body["fields"], body
    return body


def no_injected_headers(response) -> None:
    for name, value in response.items():
        assert "\r" not in name + value and "\n" not in name + value, (name, value)
    assert not response.has_header("Set-Cookie")
    assert not response.has_header("X-Injected")
