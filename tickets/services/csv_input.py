"""Reading a CSV file of attendees: decoding, rows with their line numbers, the header.

What `import_tickets` and the admin's import share before any row is checked; a file that
fails here is refused whole, before anything is written.
"""

from __future__ import annotations

import codecs
import csv
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

REQUIRED_COLUMNS = ("firstname", "lastname", "email", "phone", "ticket_type")
OPTIONAL_COLUMNS = ("external_id", "reference_code")


class CsvUnreadable(Exception):
    """The file cannot be imported at all (not CSV, wrong encoding, missing columns)."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.message, self.line = message, line


def csv_lines(binary: Iterable[bytes], encoding: str) -> Iterator[str]:
    """The file's text, one line at a time, decoded as it is read.

    Decoding line by line (rather than through a text file, which decodes 8 KB blocks) is what
    lets a wrong encoding be reported with the line it is on.

    Raises: CsvUnreadable (with the line that is not in `encoding`).
    """
    try:
        decoder = codecs.getincrementaldecoder(encoding)(errors="strict")
    except LookupError:
        raise CsvUnreadable(f"Unknown encoding {encoding!r}.") from None
    buffer = ""
    line = 0
    try:
        for line, raw in enumerate(binary, start=1):  # noqa: B007 (read in the handler)
            buffer += decoder.decode(raw)
            while (end := buffer.find("\n")) >= 0:
                yield buffer[: end + 1]
                buffer = buffer[end + 1 :]
        buffer += decoder.decode(b"", final=True)
    except UnicodeDecodeError as exc:
        raise CsvUnreadable(
            f"line {line} is not valid {encoding} ({exc.reason}). "
            "Save the file as UTF-8 or pass --encoding.",
            line=line,
        ) from None
    if buffer:
        yield buffer


def csv_rows(lines: Iterable[str], delimiter: str) -> Iterator[tuple[int, list[str]]]:
    """(line number where the row starts, cells) for every non-blank row, header included.

    Raises: CsvUnreadable.
    """
    reader = csv.reader(lines, delimiter=delimiter, strict=True)
    line = 1
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise CsvUnreadable(f"line {reader.line_num}: this is not valid CSV ({exc}).") from None
        if any(cell.strip() for cell in cells):
            yield line, cells
        line = reader.line_num + 1


@dataclass(frozen=True)
class Header:
    columns: dict[str, int]
    width: int
    ignored: tuple[str, ...]


def csv_header(cells: list[str]) -> Header:
    """Where each known column is. Raises: CsvUnreadable (duplicate or missing columns)."""
    names = [cell.strip().lower() for cell in cells]
    duplicates = sorted({n for n in names if n and names.count(n) > 1})
    if duplicates:
        raise CsvUnreadable(f"Columns named more than once: {', '.join(duplicates)}.")
    missing = [c for c in REQUIRED_COLUMNS if c not in names]
    if missing:
        raise CsvUnreadable(
            f"Missing column{'s' if len(missing) > 1 else ''}: {', '.join(missing)}. "
            f"The first line must name the columns: {', '.join(REQUIRED_COLUMNS)} "
            f"(and optionally {', '.join(OPTIONAL_COLUMNS)}); found: {', '.join(names)}."
        )
    known = set(REQUIRED_COLUMNS) | set(OPTIONAL_COLUMNS)
    return Header(
        columns={name: i for i, name in enumerate(names) if name in known},
        width=len(cells),
        ignored=tuple(n for n in names if n and n not in known),
    )
