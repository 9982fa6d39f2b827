"""wrk as the load generator of the bench scripts: cheap enough not to be the bottleneck (a
Python client on the server's 2 cores caps `GET /info` at a third of wrk's rate).

One Lua script (`LUA`), whose globals say what each request is: `PATH` and `BODY`, templates
with one `%s` (`BODY` one or two) filled with an item of `ITEMS` (a reference code, a ticket id,
a page); `RANDOM`: items drawn at random, otherwise each sent once, split between wrk's threads,
running out counted (`exhausted`); `TOKENS`: sent in turn in `Authorization` (`SCHEME`). It
counts answers by status and sums `bench._counting`'s headers. wrk's own CPU and that of the
pids the caller names (the workers) are read from /proc while it runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

WRK = os.environ.get("WRK", "wrk")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

LUA = r"""
local threads = {}
local next_id = 0

function setup(thread)
  next_id = next_id + 1
  thread:set("tid", next_id)
  table.insert(threads, thread)
end

function init(args)
  counter = 0
  exhausted = 0
  sql = 0
  redis = 0
  counted = 0
  statuses = {}
  math.randomseed(tid * 7919)
end

local function item()
  if #ITEMS == 0 then return "" end
  if RANDOM then return ITEMS[math.random(#ITEMS)] end
  local i = tid + (counter - 1) * NTHREADS
  if i > #ITEMS then
    exhausted = exhausted + 1
    i = ((i - 1) % #ITEMS) + 1
  end
  return ITEMS[i]
end

request = function()
  counter = counter + 1
  local it = item()
  local headers = {}
  if #TOKENS > 0 then
    headers["Authorization"] = SCHEME .. " " .. TOKENS[(counter % #TOKENS) + 1]
  end
  local body = nil
  if BODY ~= "" then
    headers["Content-Type"] = CONTENT_TYPE
    body = string.format(BODY, it, it)
  end
  return wrk.format(METHOD, string.format(PATH, it), headers, body)
end

response = function(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
  local s = headers["X-Bench-SQL-Statements"]
  if s then
    sql = sql + tonumber(s)
    redis = redis + tonumber(headers["X-Bench-Redis-Round-Trips"] or "0")
    counted = counted + 1
  end
end

done = function(summary, latency, requests)
  local total = {exhausted = 0, sql = 0, redis = 0, counted = 0}
  local merged = {}
  for _, thread in ipairs(threads) do
    for key, _ in pairs(total) do
      total[key] = total[key] + thread:get(key)
    end
    for status, count in pairs(thread:get("statuses")) do
      local key = tostring(status)
      merged[key] = (merged[key] or 0) + count
    end
  end
  local parts = {}
  for status, count in pairs(merged) do
    table.insert(parts, string.format('"%s": %d', status, count))
  end
  io.write(string.format(
    'RESULT {"requests": %d, "seconds": %f, "p50_ms": %f, "p99_ms": %f, '
    .. '"socket_errors": %d, "exhausted": %d, "sql": %d, "redis": %d, "counted": %d, '
    .. '"statuses": {%s}}\n',
    summary.requests, summary.duration / 1e6, latency:percentile(50) / 1e3,
    latency:percentile(99) / 1e3,
    summary.errors.connect + summary.errors.read + summary.errors.write
      + summary.errors.timeout,
    total.exhausted, total.sql, total.redis, total.counted, table.concat(parts, ", ")))
end
"""


@dataclass
class Load:
    """What each request of a wrk run is (see the module's docstring)."""

    path: str
    method: str = "GET"
    body: str = ""
    items: list = field(default_factory=list)
    random: bool = False
    tokens: list[str] = field(default_factory=list)
    scheme: str = "Bearer"  # of the Authorization header the tokens are sent in
    content_type: str = "application/json"


@dataclass
class WrkRun:
    name: str
    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    statuses: dict[str, int]
    socket_errors: int
    exhausted: int
    sql_per_request: float
    redis_per_request: float
    wrk_cpu_seconds: float
    server_cpu_seconds: float
    wall_seconds: float
    machine_cpu_seconds: float  # all cores, busy on anything (PostgreSQL, Redis, other work)

    @property
    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    @property
    def wrk_core_share(self) -> float:
        """wrk's CPU as a share of one core over its run."""
        return self.wrk_cpu_seconds / self.wall_seconds if self.wall_seconds else 0.0

    @property
    def machine_share(self) -> float:
        """The whole machine's busy CPU, in shares of one core."""
        return self.machine_cpu_seconds / self.wall_seconds if self.wall_seconds else 0.0

    def unexpected(self, expected: set[int]) -> dict[str, int]:
        return {s: n for s, n in self.statuses.items() if int(s) not in expected}


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU of a live process, from /proc/<pid>/stat (fields 14 and 15)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def machine_busy_seconds() -> float:
    """CPU seconds all cores spent on anything but idling since boot (`/proc/stat`'s first line:
    user, nice, system, idle, iowait, irq, softirq, steal; guest time is already in user)."""
    ticks = [int(n) for n in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) / CLOCK_TICKS


def _lua_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "{" + ", ".join(_lua_value(v) for v in value) + "}"
    return json.dumps(value)  # a JSON string or number is a Lua literal too


def run(
    name: str,
    port: int,
    load: Load,
    *,
    seconds: float,
    connections: int,
    threads: int = 1,
    server_pids=lambda: [],
) -> WrkRun:
    """One wrk run of `seconds` (killed at `seconds + 30` if it does not stop)."""
    lua_globals = {
        "METHOD": load.method,
        "PATH": load.path,
        "BODY": load.body,
        "ITEMS": [str(item) for item in load.items],
        "RANDOM": load.random,
        "TOKENS": list(load.tokens),
        "SCHEME": load.scheme,
        "CONTENT_TYPE": load.content_type,
        "NTHREADS": threads,
    }
    prelude = "".join(f"{key} = {_lua_value(value)}\n" for key, value in lua_globals.items())
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(prelude + LUA)
    command = [
        WRK, f"-t{threads}", f"-c{connections}", f"-d{seconds:.0f}s", "--timeout", "10s",
        "-s", script.name, f"http://127.0.0.1:{port}/",
    ]  # fmt: skip
    server_before = {pid: cpu_seconds(pid) or 0.0 for pid in server_pids()}
    machine_before, started = machine_busy_seconds(), time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wrk_cpu = 0.0
    try:
        while process.poll() is None:
            wrk_cpu = cpu_seconds(process.pid) or wrk_cpu  # the last reading before it exits
            if time.monotonic() - started > seconds + 30:
                process.kill()
                raise RuntimeError(f"wrk ({name}) did not stop")
            time.sleep(0.05)
        output = process.stdout.read()
    finally:
        os.unlink(script.name)
    wall, machine = time.monotonic() - started, machine_busy_seconds() - machine_before
    server_cpu = sum(
        (cpu_seconds(pid) or 0.0) - server_before.get(pid, 0.0) for pid in server_pids()
    )
    lines = [line for line in output.splitlines() if line.startswith("RESULT ")]
    if not lines:
        raise RuntimeError(f"wrk ({name}) gave no result:\n{output}")
    result = json.loads(lines[-1].removeprefix("RESULT "))
    counted = result["counted"] or 1
    return WrkRun(
        name=name,
        requests=result["requests"],
        seconds=result["seconds"],
        p50_ms=result["p50_ms"],
        p99_ms=result["p99_ms"],
        statuses=result["statuses"],
        socket_errors=result["socket_errors"],
        exhausted=result["exhausted"],
        sql_per_request=result["sql"] / counted if result["counted"] else float("nan"),
        redis_per_request=result["redis"] / counted if result["counted"] else float("nan"),
        wrk_cpu_seconds=wrk_cpu,
        server_cpu_seconds=server_cpu,
        wall_seconds=wall,
        machine_cpu_seconds=machine,
    )
