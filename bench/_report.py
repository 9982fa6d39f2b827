"""The one report format of the benches: what one run measured, printed the same way by every
script. A figure or a ratio (of two figures of the same run) is a line of its own: name, value
with its unit, its target and verdict, a note; runs side by side are a table; a check is a line
that passes or fails. `done()` names what missed and gives the script's exit status.
"""

from __future__ import annotations

import math
import statistics


def percentile(values: list[float], pct: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = math.ceil(pct / 100 * len(ordered))  # nearest-rank definition
    return ordered[min(len(ordered), max(rank, 1)) - 1]


def median(values) -> float:
    values = list(values)
    return statistics.median(values) if values else float("nan")


def _cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.1f}"
    return str(value)


class Report:
    def __init__(self, title: str):
        self.misses: list[str] = []
        print(f"\n== {title}", flush=True)

    def section(self, title: str) -> None:
        print(f"\n-- {title}", flush=True)

    def figure(self, name: str, value: float, unit: str = "", *, digits: int = 1,
               at_most: float | None = None, at_least: float | None = None,
               note: str = "") -> bool:  # fmt: skip
        return self._line(name, value, lambda v: f"{v:,.{digits}f} {unit}".rstrip(),
                          at_most, at_least, note)  # fmt: skip

    def ratio(self, name: str, value: float, *, times: bool = False,
              at_most: float | None = None, at_least: float | None = None,
              note: str = "") -> bool:  # fmt: skip
        """A ratio as a percentage, or as `times` (2.00×)."""
        fmt = (lambda v: f"{v:.2f}×") if times else (lambda v: f"{v:.1%}")
        return self._line(name, value, fmt, at_most, at_least, note)

    def _line(self, name, value, fmt, at_most, at_least, note) -> bool:
        target, ok = "", True
        if at_least is not None:
            target, ok = f"≥ {fmt(at_least)}", value >= at_least
        if at_most is not None:
            target, ok = f"≤ {fmt(at_most)}", ok and value <= at_most
        verdict = ("ok" if ok else "MISS") if target else ""
        if not ok:
            self.misses.append(name)
        print(f"  {name:<50} {fmt(value):>12}  {target:<11} {verdict:<4} {note}".rstrip(),
              flush=True)  # fmt: skip
        return ok

    def check(self, ok: bool, what: str) -> bool:
        print(f"  {'ok  ' if ok else 'FAIL'} {what}", flush=True)
        if not ok:
            self.misses.append(what)
        return ok

    def table(self, header: list[str], rows: list[list]) -> None:
        """Runs side by side: the first column left-aligned, the others right-aligned."""
        cells = [[_cell(value) for value in row] for row in rows]
        widths = [max([len(h), *(len(row[i]) for row in cells)]) for i, h in enumerate(header)]

        def line(row: list[str]) -> str:
            return "  " + "  ".join(
                text.ljust(width) if i == 0 else text.rjust(width)
                for i, (text, width) in enumerate(zip(row, widths, strict=True))
            )

        print(line(header) + "\n  " + "-" * (len(line(header)) - 2), flush=True)
        for row in cells:
            print(line(row), flush=True)

    def done(self) -> int:
        if self.misses:
            print(f"\nMISSED ({len(self.misses)}): " + "; ".join(self.misses[:30]), flush=True)
            return 1
        print("\nOK: every target met, every check passed", flush=True)
        return 0
