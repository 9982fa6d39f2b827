"""Tasks for the worker tests, run by real `manage.py run_worker` processes (which import them by
their path, as they import the project's)."""

import os
import time
from pathlib import Path

from django_tasks import task


@task()
def task_hold(directory: str) -> None:
    """Leave a mark for this run in `directory` (`run-<n>-<pid>`), then stay in flight until a
    file `go` appears there: a task that is running for as long as the test wants."""
    folder = Path(directory)
    run = len(list(folder.glob("run-*"))) + 1
    (folder / f"run-{run}-{os.getpid()}").touch()
    while not (folder / "go").exists():
        time.sleep(0.02)


@task()
def task_echo(n: int) -> int:
    return n
