"""The /me limit (10 a minute per user) holds across two server processes sharing Redis."""

import json

import pytest

from tests.factories import ApplicationFactory, UserFactory
from tests.oauth.support import (
    database_url,
    free_port,
    get,
    gunicorn_command,
    running,
    server_env,
    wait_for_fresh_window,
)
from tests.support import mint_token


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_me_limit_is_shared_by_two_gunicorn_processes(tmp_path):
    user = UserFactory()
    token = mint_token(application=ApplicationFactory(), user=user)
    env = server_env(DATABASE_URL=database_url())
    ports = (free_port(), free_port())

    with (
        running(gunicorn_command(ports[0]), port=ports[0], env=env, log=tmp_path / "a.log"),
        running(gunicorn_command(ports[1]), port=ports[1], env=env, log=tmp_path / "b.log"),
    ):
        for port in ports:  # warm up: database and Redis connections, imports (not /me)
            assert get(f"http://127.0.0.1:{port}/api/public/organizers", token=token)[0] == 200
        wait_for_fresh_window(f"user:{user.id}", margin=30)
        answers = [
            get(f"http://127.0.0.1:{ports[i % 2]}/api/public/me", token=token) for i in range(12)
        ]

    statuses = [status for status, _, _ in answers]
    logs = "".join((tmp_path / name).read_text()[-1500:] for name in ("a.log", "b.log"))
    assert statuses == [200] * 10 + [429, 429], logs
    assert all(json.loads(body)["id"] == user.id for _, _, body in answers[:10])
    _, headers, body = answers[10]
    assert json.loads(body)["error"] == "rate_limited"
    assert 1 <= int(headers["Retry-After"]) <= 60
    # Each process served half of them: the count really crossed processes.
    for port, log in zip(ports, ("a.log", "b.log"), strict=True):
        text = (tmp_path / log).read_text()
        assert text.count("GET /api/public/me ") == 6, (port, text[-2000:])
