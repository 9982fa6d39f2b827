"""A sending thread keeps its connection to a receiver that keeps it open (HTTP/1.1), one per
URL origin, and sends again on a new one when the receiver closed it while idle."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from webhooks import network


class KeepAliveReceiver:
    """HTTP/1.1: keeps connections open unless `closing`, which closes each after its answer
    without saying so (as a receiver's idle timeout does), or `forgetting`, which closes a
    kept-alive connection when the next request arrives on it, unanswered (as a receiver whose
    idle timeout fires while the request is on its way). Every answer sets a cookie."""

    def __init__(self):
        self.connections: list[tuple] = []
        self.requests = 0
        self.unanswered = 0
        self.cookies: list[str | None] = []
        self.closing = False
        self.forgetting = False
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                receiver.connections.append(self.client_address)
                self.answered = False

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.cookies.append(self.headers.get("Cookie"))
                if receiver.forgetting and self.answered:
                    receiver.unanswered += 1
                    self.close_connection = True
                    return
                receiver.requests += 1
                self.send_response(204)
                self.send_header("Content-Length", "0")
                self.send_header("Set-Cookie", "session=receiver; Path=/")
                self.end_headers()
                self.answered = True
                self.close_connection = receiver.closing

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def keep_alive_receiver():
    receiver = KeepAliveReceiver()
    yield receiver
    receiver.server.shutdown()
    receiver.server.server_close()


def _post(url: str) -> int:
    target = network.target_check(url, allow_private=True)
    return network.post(target, body=b"{}", headers={"webhook-id": "evt_1"}, timeout=5)


def test_posts_to_a_receiver_share_one_connection(keep_alive_receiver):
    assert [_post(keep_alive_receiver.url) for _ in range(5)] == [204] * 5
    assert keep_alive_receiver.requests == 5
    assert len(keep_alive_receiver.connections) == 1


def test_a_connection_the_receiver_closed_while_idle_is_not_reused(keep_alive_receiver):
    keep_alive_receiver.closing = True
    assert [_post(keep_alive_receiver.url) for _ in range(3)] == [204] * 3
    assert keep_alive_receiver.requests == 3
    assert len(keep_alive_receiver.connections) == 3


def test_a_post_on_a_connection_found_dropped_is_sent_once_more(keep_alive_receiver):
    """Closed between the client's check that it is still open and the request: the POST goes
    again on a new connection."""
    keep_alive_receiver.forgetting = True
    assert _post(keep_alive_receiver.url) == 204

    assert _post(keep_alive_receiver.url) == 204

    assert (keep_alive_receiver.requests, keep_alive_receiver.unanswered) == (2, 1)
    assert len(keep_alive_receiver.connections) == 2


def test_posts_carry_no_cookie_the_receiver_set(keep_alive_receiver):
    assert [_post(keep_alive_receiver.url) for _ in range(2)] == [204] * 2
    assert keep_alive_receiver.cookies == [None, None]


def test_each_checked_target_has_a_connection_of_its_own(keep_alive_receiver, monkeypatch):
    """Keyed by the URL's host (the Host header, the TLS name): two names at one address have a
    connection each."""
    port = keep_alive_receiver.server.server_address[1]
    monkeypatch.setattr(network, "resolve", lambda host, port: ["127.0.0.1"])
    for _ in range(2):
        assert _post(f"http://one.example.test:{port}/hooks") == 204
        assert _post(f"http://two.example.test:{port}/hooks") == 204

    assert keep_alive_receiver.requests == 4
    assert len(keep_alive_receiver.connections) == 2
