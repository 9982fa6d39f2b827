"""Reading a CSV file of attendees: decoding, rows with their line numbers, the header (a
workbook's too: `xlsx_input` gives its rows in the same shape).

What `import_tickets` and the admin's import share before any row is checked; a file that
fails here is refused whole, before anything is written. Messages are translated: the admin
shows them in its language, the command in English.
"""

from __future__ import annotations

import codecs
import csv
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

REQUIRED_COLUMNS = ("firstname", "lastname", "email", "phone", "ticket_type")
OPTIONAL_COLUMNS = ("external_id", "reference_code")


class FileUnreadable(Exception):
    """The file cannot be imported at all (not CSV or XLSX, wrong encoding, missing columns).

    `code` "encoding" marks a CSV file that is not in the encoding read: each interface says
    how to fix that its own way (the command has --encoding, the admin has not).
    """

    def __init__(self, message: str, line: int | None = None, code: str = ""):
        super().__init__(message)
        self.message, self.line, self.code = message, line, code


def csv_lines(binary: Iterable[bytes], encoding: str) -> Iterator[str]:
    """The file's text, one line at a time, decoded as it is read.

    Decoding line by line (rather than through a text file, which decodes 8 KB blocks) is what
    lets a wrong encoding be reported with the line it is on.

    Raises: FileUnreadable (with the line that is not in `encoding`).
    """
    try:
        decoder = codecs.getincrementaldecoder(encoding)(errors="strict")
    except LookupError:
        raise FileUnreadable(_("Unknown encoding %(name)r.") % {"name": encoding}) from None
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
        raise FileUnreadable(
            _("line %(line)d is not valid %(encoding)s (%(reason)s).")
            % {"line": line, "encoding": encoding, "reason": exc.reason},
            line=line,
            code="encoding",
        ) from None
    if buffer:
        yield buffer


def csv_rows(lines: Iterable[str], delimiter: str) -> Iterator[tuple[int, list[str]]]:
    """(line number where the row starts, cells) for every non-blank row, header included.

    Raises: FileUnreadable.
    """
    reader = csv.reader(lines, delimiter=delimiter, strict=True)
    line = 1
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise FileUnreadable(
                _("line %(line)d: this is not valid CSV (%(error)s).")
                % {"line": reader.line_num, "error": exc}
            ) from None
        if any(cell.strip() for cell in cells):
            yield line, cells
        line = reader.line_num + 1


@dataclass(frozen=True)
class Header:
    columns: dict[str, int]
    width: int
    ignored: tuple[str, ...]


def csv_header(cells: list[str]) -> Header:
    """Where each known column is. Raises: FileUnreadable (duplicate or missing columns)."""
    names = [cell.strip().lower() for cell in cells]
    duplicates = sorted({n for n in names if n and names.count(n) > 1})
    if duplicates:
        raise FileUnreadable(
            _("Columns named more than once: %(names)s.") % {"names": ", ".join(duplicates)}
        )
    missing = [c for c in REQUIRED_COLUMNS if c not in names]
    if missing:
        raise FileUnreadable(
            ngettext("Missing column: %(missing)s.", "Missing columns: %(missing)s.", len(missing))
            % {"missing": ", ".join(missing)}
            + " "
            + _(
                "The first line must name the columns: %(required)s (and optionally "
                "%(optional)s); found: %(found)s."
            )
            % {
                "required": ", ".join(REQUIRED_COLUMNS),
                "optional": ", ".join(OPTIONAL_COLUMNS),
                "found": ", ".join(names),
            }
        )
    known = set(REQUIRED_COLUMNS) | set(OPTIONAL_COLUMNS)
    return Header(
        columns={name: i for i, name in enumerate(names) if name in known},
        width=len(cells),
        ignored=tuple(n for n in names if n and n not in known),
    )
