"""The shared API layer: error envelope, token sources, pagination parameters."""

import pytest

pytestmark = pytest.mark.django_db


def test_unknown_api_path_is_json_404(api_client):
    response = api_client.get("/api/public/no-such-thing")
    assert response.status_code == 404
    assert response.json() == {
        "success": False,
        "error": "not_found",
        "message": "No such endpoint.",
    }
