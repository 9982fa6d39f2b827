"""Reading an Excel workbook (XLSX) of attendees: the first sheet's rows as text cells, numbered
as Excel numbers them, in the shape `csv_input.csv_rows` gives a CSV file's, so that the
importer checks both the same way.

The workbook is read in openpyxl's read-only mode, which parses the sheet as a stream: memory
stays flat whatever the number of rows. Before openpyxl sees it, the archive is checked, since an
XLSX file is a zip: a few kilobytes can unpack to gigabytes (a zip bomb), and the parts openpyxl
reads whole (shared strings, styles) would then fill memory.
"""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Iterator
from datetime import date, datetime, time, timedelta
from typing import BinaryIO

from django.utils.translation import gettext as _

from .csv_input import FileUnreadable

# Bounds of what a real attendee workbook needs, far past the upload limit's worth of rows: a
# worksheet streams, so it may be large; everything else is read whole.
XLSX_MAX_UNPACKED_BYTES = 1024 * 1024 * 1024
XLSX_MAX_PART_BYTES = 64 * 1024 * 1024  # a part other than a worksheet (shared strings, styles)
# Sheet XML packs about 10:1; far past that, a part is built to unpack, not to be read.
XLSX_MAX_RATIO = 200
_SMALL_PART = 1024 * 1024  # below this, any ratio (a sheet of one repeated empty row)
# Columns read per row: the import's columns are among the first; a sheet whose stated width is
# 16,384 columns must not make every row that wide.
XLSX_MAX_COLUMNS = 200

# What openpyxl raises on a damaged archive or sheet: a bad zip, a missing part, XML that does
# not parse (SyntaxError covers ElementTree's ParseError), values it cannot convert.
_DAMAGED = (
    zipfile.BadZipFile,
    zlib.error,
    EOFError,
    OSError,
    KeyError,
    IndexError,
    ValueError,
    TypeError,
    AttributeError,
    SyntaxError,
    NotImplementedError,
)


class UnreadableCell(str):
    """A cell the import cannot take as text (a formula, a date, an error): empty as text, and
    `reason` rejects its row if the import reads its column (`TicketImporter`)."""

    reason: str

    def __new__(cls, reason: str):
        cell = super().__new__(cls, "")
        cell.reason = reason
        return cell


def _not_a_workbook() -> FileUnreadable:
    return FileUnreadable(
        _(
            "This file is not an Excel workbook (.xlsx) that can be read: it is damaged, or it "
            "is another kind of file with an .xlsx name. Save it again from Excel as an Excel "
            "Workbook (.xlsx) or as CSV UTF-8 (.csv)."
        )
    )


def xlsx_archive_check(source: BinaryIO) -> None:
    """Refuse a file that is not a zip, or whose parts unpack past what a workbook needs.

    The sizes checked are the archive's own; Python's zipfile stops at them, and a part that
    holds more than it declares fails its CRC check, so a lying archive is refused too.

    Raises: FileUnreadable.
    """
    try:
        with zipfile.ZipFile(source) as archive:
            parts = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError):
        raise _not_a_workbook() from None
    finally:
        source.seek(0)
    unpacked = 0
    for part in parts:
        unpacked += part.file_size
        sheet = part.filename.startswith("xl/worksheets/")
        too_packed = part.file_size > _SMALL_PART and part.file_size > XLSX_MAX_RATIO * max(
            part.compress_size, 1
        )
        if too_packed or (not sheet and part.file_size > XLSX_MAX_PART_BYTES):
            break
    else:
        if unpacked <= XLSX_MAX_UNPACKED_BYTES:
            return
    raise FileUnreadable(
        _(
            "This workbook unpacks to far more data than its rows can hold, so it is not read. "
            "Save it again from Excel, or as CSV UTF-8 (.csv)."
        )
    )


def _text(cell) -> str:
    """The cell as the import reads it: text, a number as written, or an `UnreadableCell`."""
    value = cell.value
    if value is None:
        return ""
    if cell.data_type == "f":
        return UnreadableCell(
            _(
                "cell %(cell)s holds a formula; the import reads values, not formulas: copy "
                "the column and paste it as values"
            )
            % {"cell": cell.coordinate}
        )
    if cell.data_type == "e":
        return UnreadableCell(
            _("cell %(cell)s holds the error %(error)s") % {"cell": cell.coordinate, "error": value}
        )
    if isinstance(value, datetime | date | time | timedelta):
        return UnreadableCell(
            _(
                "cell %(cell)s holds a date or time, not text: format the column as Text and "
                "type the value again"
            )
            % {"cell": cell.coordinate}
        )
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # a phone number or an id typed as a number
    return str(value)


def xlsx_rows(source: BinaryIO) -> Iterator[tuple[int, list[str]]]:
    """(row number, cells) for every non-blank row of the first sheet, header included; the
    rows after the header are cut or padded to the header's width (a spreadsheet has no
    shifted rows, and a cell under no column is in no column the import reads).

    Raises: FileUnreadable (not a workbook, a zip bomb, a damaged part, no sheet).
    """
    xlsx_archive_check(source)
    # Imported here: a tenth of a second at start that a CSV import need not pay.
    from openpyxl import load_workbook
    from openpyxl.utils.exceptions import InvalidFileException

    try:
        workbook = load_workbook(source, read_only=True, data_only=False, keep_links=False)
    except (*_DAMAGED, InvalidFileException):
        raise _not_a_workbook() from None
    try:
        if not workbook.worksheets:
            raise FileUnreadable(_("This workbook has no sheet to import."))
        sheet = workbook.worksheets[0]
        # The stated size may be wrong (other programs write it) and would cut or pad the rows.
        sheet.reset_dimensions()
        width = None
        for cells in sheet.iter_rows(max_col=XLSX_MAX_COLUMNS):
            texts = [_text(cell) for cell in cells]
            if not any(text.strip() or isinstance(text, UnreadableCell) for text in texts):
                continue
            line = next(cell.row for cell in cells if cell.value is not None)
            if width is None:
                while texts and not texts[-1].strip():
                    texts.pop()
                width = len(texts)
            else:
                texts = (texts + [""] * width)[:width]
            yield line, texts
    except (*_DAMAGED, InvalidFileException):
        raise _not_a_workbook() from None
    finally:
        workbook.close()
