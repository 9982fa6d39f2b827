"""The files an attendee import takes, CSV or an Excel workbook (XLSX), told apart by the file's
name, and read as numbered rows of text cells whichever it is: the admin's import and
`import_tickets` check a workbook's rows exactly as a CSV file's.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import PurePath
from typing import BinaryIO

from django.utils.translation import gettext as _

from .csv_input import FileUnreadable, csv_lines, csv_rows
from .xlsx_input import xlsx_rows

# Each format by the name's suffix, as our exports name them.
FORMATS = {".csv": "csv", ".xlsx": "xlsx"}


def import_format(name: str) -> str:
    """ "csv" or "xlsx", by the file name's suffix. Raises: FileUnreadable, whose sentence names
    the formats taken (an .xls or .ods file, a PDF)."""
    fmt = FORMATS.get(PurePath(name).suffix.lower())
    if fmt is None:
        raise FileUnreadable(
            _(
                "The import takes a CSV file (.csv, UTF-8) or an Excel workbook (.xlsx); "
                "“%(name)s” is neither. In Excel, save it as CSV UTF-8 or as Excel Workbook."
            )
            % {"name": PurePath(name).name}
        )
    return fmt


def file_rows(
    binary: BinaryIO, fmt: str, *, encoding: str = "utf-8-sig", delimiter: str = ","
) -> Iterator[tuple[int, list[str]]]:
    """(line or row number, cells) for every non-blank row of the file, header included, read
    as it goes. `encoding` and `delimiter` are a CSV file's.

    Raises: FileUnreadable.
    """
    if fmt == "xlsx":
        return xlsx_rows(binary)
    return csv_rows(csv_lines(binary, encoding), delimiter)
