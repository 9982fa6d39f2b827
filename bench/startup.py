"""Seconds from `make run` on a fresh SQLite database to the first 200 from /api/public/info.

Each round runs the Makefile's `run` target of every checkout given (alternating, so a busy
machine weighs on all alike), then stops it as Ctrl-C would (SIGINT to its process group) and
checks nothing of it is left. Beside the seconds it reports the CPU seconds (user + sys) the run
spent until then, and a fresh `migrate`'s on its own: a loaded machine inflates wall time, not
those.

    python bench/startup.py --venv .venv --rounds 3 CHECKOUT [CHECKOUT ...]
"""

import argparse
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._http import free_port

ANSWER_TIMEOUT = 180
STOP_TIMEOUT = 30


def fresh_env(db: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    return env | {"DATABASE_URL": f"sqlite:///{db}"}


def migrate_cpu(checkout: Path, python: Path, workdir: Path) -> float:
    """CPU seconds (user + sys) of `manage.py migrate` on a fresh database."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = fresh_env(workdir / "migrate.sqlite3")
    subprocess.run([python, "manage.py", "migrate", "--noinput"], cwd=checkout, env=env,
                   check=True, stdout=subprocess.DEVNULL)  # fmt: skip
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def group(pgid: int) -> dict[int, float]:
    """The live processes of a process group and their CPU seconds so far; the leader's (make's)
    with what it has reaped (migrate, bootstrap_demo)."""
    found = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            ticks = sum(int(n) for n in fields[11 : 15 if int(entry.name) == pgid else 13])
            found[int(entry.name)] = ticks / os.sysconf("SC_CLK_TCK")
    return found


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def first_answer(checkout: Path, venv: Path, workdir: Path) -> tuple[float, float]:
    """Seconds and CPU seconds to the first 200, then Ctrl-C; raises if it never answers or
    leaves processes."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/api/public/info"
    # `-o`: the venv is given, never (re)installed by this measurement.
    command = ["make", "-C", str(checkout), "-o", f"{venv}/.installed", "run"]
    command += [f"VENV={venv}", f"PORT={port}"]
    with open(workdir / "make-run.log", "wb") as log:
        started = time.monotonic()
        make = subprocess.Popen(command, env=fresh_env(workdir / "db.sqlite3"), stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
        try:
            while not answers(url):
                if make.poll() is not None or time.monotonic() - started > ANSWER_TIMEOUT:
                    output = (workdir / "make-run.log").read_text()[-3000:]
                    raise RuntimeError(f"no answer from {url}; make run said:\n{output}")
                time.sleep(0.05)
            seconds = time.monotonic() - started
            cpu = sum(group(make.pid).values())
        finally:
            if group(make.pid):
                os.killpg(make.pid, signal.SIGINT)
            make.wait(STOP_TIMEOUT)
    deadline = time.monotonic() + STOP_TIMEOUT
    while (left := list(group(make.pid))) and time.monotonic() < deadline:
        time.sleep(0.1)
    if left:
        os.killpg(make.pid, signal.SIGKILL)
        raise RuntimeError(f"Ctrl-C left processes {left} of {checkout}")
    return seconds, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkouts", nargs="+", type=Path)
    parser.add_argument("--venv", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    venv = args.venv.resolve()
    results = {checkout: {"answer": [], "cpu": [], "migrate": []} for checkout in args.checkouts}
    for round_number in range(1, args.rounds + 1):
        for checkout in args.checkouts:
            with tempfile.TemporaryDirectory(prefix="make-run-") as tmp:
                workdir = Path(tmp)
                cpu = migrate_cpu(checkout.resolve(), venv / "bin" / "python", workdir)
                seconds, run_cpu = first_answer(checkout.resolve(), venv, workdir)
            results[checkout]["migrate"].append(cpu)
            results[checkout]["answer"].append(seconds)
            results[checkout]["cpu"].append(run_cpu)
            print(f"round {round_number} {checkout}: first 200 after {seconds:.1f} s "
                  f"({run_cpu:.1f} CPU s), migrate {cpu:.2f} CPU s", flush=True)  # fmt: skip
    for checkout, found in results.items():
        print(f"{checkout}: median first 200 {statistics.median(found['answer']):.1f} s "
              f"({statistics.median(found['cpu']):.1f} CPU s), "
              f"median migrate {statistics.median(found['migrate']):.2f} CPU s")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
