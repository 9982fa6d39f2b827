"""The ticket's QR code (CONTRACT §14), as PNG and SVG, of what it carries
(`signed_codes.ticket_qr_data`: the signed code, or the reference code exactly).

Error correction M at least (segno raises it to the highest level that fits the same size, H for
an 8-character code), never a Micro QR (phones' scanners skip those), and the standard
four-module quiet zone. A code's images never change, so they are rendered once per process and
kept in a small LRU cache: a holder reloading the page, or the email and the page asking for the
same ticket, cost a dictionary lookup.
"""

import functools
import hashlib
import io

import segno

QR_ERROR = "m"
QR_BORDER = 4  # modules of quiet zone, as ISO/IEC 18004 asks
PNG_SCALE = 10  # pixels per module: 290 px for a version-1 code, sharp on any screen
QR_CACHE_SIZE = 1024


def _qr(data: str) -> segno.QRCode:
    return segno.make(data, error=QR_ERROR, boost_error=True, micro=False)


@functools.lru_cache(maxsize=QR_CACHE_SIZE)
def qr_png(data: str) -> bytes:
    out = io.BytesIO()
    _qr(data).save(out, kind="png", scale=PNG_SCALE, border=QR_BORDER)
    return out.getvalue()


@functools.lru_cache(maxsize=QR_CACHE_SIZE)
def qr_svg(data: str) -> bytes:
    """Scalable, without a fixed size (the page sets it), no XML declaration."""
    out = io.BytesIO()
    _qr(data).save(
        out, kind="svg", scale=1, border=QR_BORDER, light="#fff", xmldecl=False, omitsize=True
    )
    return out.getvalue()


def qr_etag(data: str) -> str:
    """A strong ETag: the images depend on the code and on the settings above, nothing else."""
    seed = f"{data}|{QR_ERROR}|{QR_BORDER}|{PNG_SCALE}|{segno.__version__}"
    return '"' + hashlib.sha256(seed.encode()).hexdigest()[:32] + '"'
