"""Part 2 of `bench/isolation.py`: organizer B's endpoints that never answer, and its pings,
beside organizer A's creations, whose webhooks (at a receiver here) and emails are timed."""

from __future__ import annotations

import threading
import time

from bench._http import Receiver, call
from tests.smtp_server import SmtpServer


class MailWatch:
    """When each holder's email reached the answering SMTP server (by its recipient)."""

    def __init__(self, smtp: SmtpServer):
        self.smtp, self.seen, self._stop = smtp, {}, threading.Event()
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self):
        done = 0
        while not self._stop.wait(0.02):
            for message in self.smtp.messages[done:]:
                for word in message.split():
                    if word.strip("<>,").endswith("@isolation.example"):
                        self.seen.setdefault(word.strip("<>,").lower(), time.monotonic())
                done += 1


def api(method: str, port: int, path: str, token: str, body=None):
    reply = call(method, port, f"/api/public{path}", token=token, json_body=body)
    if reply.status not in (200, 201):
        raise RuntimeError(f"{method} {path}: {reply.status} {reply.raw}")
    return reply.body


def hostile_b(port: int, s: dict, hung_http: SmtpServer, endpoints: int = 20) -> list[int]:
    """Organizer B's `endpoints` endpoints, which accept connections and never answer."""
    b, token = s["b"], s["admins"]["b"]
    return [
        api(
            "POST",
            port,
            f"/organizers/{b.organizer_id}/webhooks",
            token,
            {"url": f"http://127.0.0.1:{hung_http.port}/hang/{n}", "event_types": ["*"]},
        )["webhook"]["id"]
        for n in range(endpoints)
    ]


def pings(port: int, s: dict, ids: list[int], count: int = 200) -> None:
    """`count` pings of B's endpoints queued, in turn."""
    b, token = s["b"], s["admins"]["b"]
    for n in range(count):
        api("POST", port, f"/organizers/{b.organizer_id}/webhooks/{ids[n % len(ids)]}/test", token)


def creations(
    port: int, s: dict, count: int, tag: str, receiver: Receiver, mail: MailWatch, wait_mail: bool
) -> dict:
    """A's tickets, a few a second; the delays to the first attempt and to the email."""
    simple = s["simple"]
    sent = {}
    for n in range(count):
        email = f"{tag}-{n}@isolation.example"
        started = time.monotonic()
        reply = call(
            "POST",
            port,
            f"{simple.event_path}/tickets",
            token=s["admins"]["a"],
            json_body={
                "ticket_type_id": s["type_a"],
                "firstname": "Anan",
                "lastname": "Wong",
                "email": email,
                "phone": "0812345678",
            },
        )
        if reply.status != 200:
            raise RuntimeError(f"creation: {reply.status} {reply.raw}")
        sent[reply.body["ticket"]["id"]] = (email, started)
        time.sleep(0.25)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        hooks = all(t in receiver.first for t in sent)
        mails = all(e in mail.seen for e, _ in sent.values())
        if hooks and (mails or not wait_mail):
            break
        time.sleep(0.1)
    hook = [receiver.first.get(t, float("inf")) - at for t, (_, at) in sent.items()]
    mails = [mail.seen.get(e, float("inf")) - at for e, at in sent.values()]
    return {"webhook": hook, "email": mails}
