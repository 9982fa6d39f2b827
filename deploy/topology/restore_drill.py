"""`make restore-drill`: a backup restored to a point in time, and checked against what was
written.

    python deploy/topology/restore_drill.py [--before 300] [--after 100]

On a PostgreSQL of its own (a cluster in a temporary directory, on DRILL_PORT, archiving its
WAL with pgBackRest into a repository beside it; the machine's PostgreSQL is never touched):
1. the service's schema (migrate) and an event; `pgbackrest stanza-create`, `check`, a full
   `backup`;
2. `--before` check-ins through the app (gunicorn on APP_PORT), each acknowledged with a 200;
   the database's clock read after the last of them: the restore target; then `--after` more,
   which the restore must not bring back; the WAL switched and archived;
3. `pgbackrest restore --type=time --target=<that time> --target-action=promote` into a fresh
   data directory, started on RESTORED_PORT;
4. the restored database checked: as many check-ins as were acknowledged before the target, the
   last acknowledged one present, none of the later ones.
Prints the figures and the commands it ran (deploy/README.md's runbook uses the same); exit 1 on
any mismatch. Stops and removes everything it started, whatever happens.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench._harness import PYTHON, Gunicorn, server_env, setup_django  # noqa: E402
from bench._http import call  # noqa: E402

STANZA = "ticketing"
DRILL_PORT = int(os.environ.get("DRILL_PORT", "15600"))
RESTORED_PORT = int(os.environ.get("RESTORED_PORT", "15601"))
APP_PORT = int(os.environ.get("DRILL_APP_PORT", "8300"))
WAIT = 120  # seconds any condition may take
STARTED = time.monotonic()


def say(text: str) -> None:
    print(f"[{time.monotonic() - STARTED:5.0f} s] {text}", flush=True)


class Drill:
    """The drill's directory: the cluster, pgBackRest's repository and configuration, the
    restored cluster. Everything runs as the postgres user (archive_command does anyway)."""

    def __init__(self):
        self.base = Path(tempfile.mkdtemp(prefix="ticketing-restore-drill-"))
        self.bin = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))[-1].parent
        self.config = self.base / "pgbackrest.conf"
        self.data = self.base / "data"
        self.restored = self.base / "restored"
        if os.geteuid() == 0:
            shutil.chown(self.base, user="postgres", group="postgres")
        self.base.chmod(0o700)

    def run(self, *command: str, show: bool = False) -> str:
        if show:
            print(f"  $ {' '.join(command)}", flush=True)
        if os.geteuid() == 0:
            command = ("setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--",
                       *command)  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise SystemExit(f"{command[-1]} failed: {done.stderr or done.stdout}")
        return done.stdout

    def pgbackrest(self, *args: str) -> str:
        return self.run("pgbackrest", f"--config={self.config}", f"--stanza={STANZA}", *args,
                        show=True)  # fmt: skip

    def create(self) -> None:
        self.run(str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "-A", "trust",
                 "-N", "--data-checksums")  # fmt: skip
        (self.base / "pgbackrest.conf").write_text(
            f"[global]\nrepo1-path={self.base}/repo\nrepo1-retention-full=2\n"
            f"log-path={self.base}/log\nlock-path={self.base}/lock\nstart-fast=y\n"
            f"log-level-console=warn\narchive-timeout=60\n\n"
            f"[{STANZA}]\npg1-path={self.data}\npg1-port={DRILL_PORT}\n"
            f"pg1-socket-path={self.base}\npg1-user=postgres\n"
        )
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(
                f"listen_addresses = '127.0.0.1'\nport = {DRILL_PORT}\n"
                f"unix_socket_directories = '{self.base}'\nwal_level = replica\n"
                "archive_mode = on\n"
                f"archive_command = 'pgbackrest --config={self.config} --stanza={STANZA} "
                "archive-push %p'\n"
            )
        if os.geteuid() == 0:
            shutil.chown(self.config, user="postgres", group="postgres")
        self.pg_ctl(self.data, "start")

    def pg_ctl(self, data: Path, action: str, *options: str) -> None:
        log = ["-l", str(data.parent / f"{data.name}.log")] if action == "start" else []
        self.run(str(self.bin / "pg_ctl"), "-D", str(data), *log, *options, "-w", "-t", "120",
                 action)  # fmt: skip

    def restore(self, target: str) -> None:
        """The backup and the archived WAL up to `target`, into a fresh data directory, started
        on RESTORED_PORT (not archiving: the repository is the drill cluster's)."""
        self.restored.mkdir(mode=0o700)
        if os.geteuid() == 0:
            shutil.chown(self.restored, user="postgres", group="postgres")
        self.pgbackrest(f"--pg1-path={self.restored}", "--type=time", f"--target={target}",
                        "--target-action=promote", "restore")  # fmt: skip
        options = f"-p {RESTORED_PORT} -c archive_mode=off -k {self.base}"
        self.pg_ctl(self.restored, "start", "-o", options)

    def destroy(self) -> None:
        for data in (self.restored, self.data):
            if (data / "postmaster.pid").exists():
                try:
                    self.pg_ctl(data, "stop", "-m", "immediate")
                except SystemExit as exc:
                    print(exc, file=sys.stderr)
        shutil.rmtree(self.base, ignore_errors=True)


def sql(port: int, query: str, *params):
    import psycopg

    url = f"postgres://postgres@127.0.0.1:{port}/{DATABASE}"
    with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
        return conn.execute(query, params).fetchall()


DATABASE = "ticketing_drill"


def wait_for(condition, what: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"{what}: not in {timeout:.0f} s")
        time.sleep(0.1)


def prepare(drill: Drill, tickets: int, schema_from: str | None):
    """The schema and an event of `tickets` tickets on the drill cluster; the servers' env.
    The schema is migrated, or copied from `schema_from` (a database of the same release, as
    the tests have: a minute sooner)."""
    drill.run(str(drill.bin / "createdb"), "-h", "127.0.0.1", "-p", str(DRILL_PORT), "-U",
              "postgres", DATABASE)  # fmt: skip
    url = f"postgres://postgres@127.0.0.1:{DRILL_PORT}/{DATABASE}"
    redis_url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/6")
    env = server_env(
        database_url=url,
        redis_url=redis_url,
        CACHE_KEY_PREFIX=f"restore-drill-{time.time_ns()}",
        API_RATE_LIMIT="1000000/m",
        BENCH_LOG_LEVEL="WARNING",
    )
    env["LOG_LEVEL"] = "WARNING"
    if schema_from:
        dump = subprocess.run(["pg_dump", "--schema-only", "--no-owner", schema_from],
                              capture_output=True, check=True, timeout=120)  # fmt: skip
        subprocess.run(["psql", "-q", "-v", "ON_ERROR_STOP=1", url], input=dump.stdout,
                       capture_output=True, check=True, timeout=120)  # fmt: skip
    else:
        subprocess.run(
            [PYTHON, "manage.py", "migrate", "--no-input"], cwd=ROOT, env=env, check=True,
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
    setup_django(env)
    from django.db import connections

    from bench._data import reference_codes, seed

    data = seed(tickets=tickets, gates=1, label="drill")
    codes = reference_codes(data, data.ticket_ids)
    connections.close_all()
    return env, data, codes


def check_in(data, codes: list[str], token: str, run: str) -> list[tuple[str, str]]:
    """Each code scanned once at the gate; the (scan id, used_at) of each acknowledged one."""
    acknowledged = []
    path = f"{data.event_path}/tickets/checkin"
    for code in codes:
        scan_id = f"{run}-{code}"
        body = {"reference_code": code, "scan_id": scan_id}
        reply = call("POST", APP_PORT, path, token=token, json_body=body, timeout=15)
        if reply.status == 200:
            acknowledged.append((scan_id, reply.body["ticket"]["used_at"]))
    return acknowledged


def compare(data, before: list, after: list) -> list[str]:
    """The restored database against what was acknowledged; what does not match."""
    event = data.event_id
    scans = {row[0] for row in sql(RESTORED_PORT, "SELECT scan_id FROM tickets_scanrecord "
                                   "WHERE event_id = %s", event)}  # fmt: skip
    (used,) = sql(RESTORED_PORT, "SELECT count(*) FROM tickets_ticket WHERE event_id = %s "
                  "AND status = 'used'", event)[0]  # fmt: skip
    (logged,) = sql(RESTORED_PORT, "SELECT count(*) FROM tickets_checkinlog l JOIN "
                    "tickets_ticket t ON t.id = l.ticket_id WHERE t.event_id = %s "
                    "AND l.action = 'check_in'", event)[0]  # fmt: skip
    last_scan, last_at = before[-1]
    print(
        f"acknowledged before the target: {len(before)} (the last {last_scan} at {last_at});"
        f" after it: {len(after)}"
    )
    print(f"restored: {len(scans)} scan records, {used} tickets used, {logged} check-in rows")
    expected = {scan_id for scan_id, _ in before}
    mismatches = []
    if scans != expected:
        missing, extra = expected - scans, scans - expected
        mismatches.append(f"scan records: {len(missing)} missing, {len(extra)} not expected")
    if not used == logged == len(before):
        mismatches.append(f"{used} used / {logged} rows, expected {len(before)}")
    if last_scan not in scans:
        mismatches.append(f"the last acknowledged check-in ({last_scan}) is missing")
    return mismatches


def drill_run(drill: Drill, args) -> list[str]:
    drill.create()
    env, data, codes = prepare(drill, args.before + args.after, args.schema_from)
    say(f"drill cluster on {DRILL_PORT}: schema and an event of {len(codes)} tickets")
    drill.pgbackrest("stanza-create")
    drill.pgbackrest("check")
    drill.pgbackrest("--type=full", "backup")
    say("full backup taken")
    app = Gunicorn(APP_PORT, env, workers=1, name="restore-drill").start()
    try:
        app.wait_ready()
        run = secrets.token_hex(4)
        before = check_in(data, codes[: args.before], data.gate_tokens[0], run)
        ((target,),) = sql(DRILL_PORT, "SELECT clock_timestamp()::text")
        after = check_in(data, codes[args.before :], data.gate_tokens[0], run)
    finally:
        app.stop()
    say(f"{len(before)} check-ins acknowledged, restore target {target}, {len(after)} after it")
    if not before or not after:
        return ["the app acknowledged no check-in on one side of the target"]
    drill.pgbackrest("check")  # switches to a new WAL segment and waits until it is archived
    drill.restore(target)
    wait_for(lambda: not sql(RESTORED_PORT, "SELECT pg_is_in_recovery()")[0][0], "promoted")
    say(f"restored to {target} into a fresh cluster on {RESTORED_PORT}")
    return compare(data, before, after)


def main() -> int:
    parser = argparse.ArgumentParser(description="backup, point-in-time restore, compare")
    parser.add_argument("--before", type=int, default=300, help="check-ins before the target")
    parser.add_argument("--after", type=int, default=100, help="check-ins after it")
    parser.add_argument("--schema-from", help="a database URL to copy the schema from")
    args = parser.parse_args()
    for tool in ("pgbackrest",):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is missing (apt-get install pgbackrest)")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    drill = Drill()
    try:
        mismatches = drill_run(drill, args)
    finally:
        if "django" in sys.modules:
            from django.db import connections

            connections.close_all()
        drill.destroy()
    for mismatch in mismatches:
        print(f"FAIL {mismatch}")
    print("restore drill:", "FAILED" if mismatches else "ok")
    return 1 if mismatches else 0


if __name__ == "__main__":
    raise SystemExit(main())
