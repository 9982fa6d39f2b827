"""A fake camera for Chromium: a Y4M video of a QR code that comes and goes.

Chromium's `--use-file-for-fake-video-capture` plays the file in a loop as the camera. The code
is in view for `shown` frames, then out of view for `hidden` frames, as when a guest holds a
ticket up and lowers it: the page counts a code again only after it has left the frame.
"""

from pathlib import Path

import segno

WHITE, BLACK, NEUTRAL_CHROMA = 235, 16, 128  # video-range luma, grey chroma


def qr_video(
    path: Path,
    text: str,
    *,
    width: int = 320,
    height: int = 240,
    fps: int = 10,
    shown: int = 20,
    hidden: int = 10,
) -> Path:
    """Write `path`: 4:2:0 Y4M frames showing the QR code of `text`, centred, then a blank."""
    rows = [list(row) for row in segno.make(text, micro=False).matrix_iter(scale=1, border=4)]
    scale = min(width, height) * 8 // 10 // len(rows)
    left = (width - len(rows) * scale) // 2
    top = (height - len(rows) * scale) // 2
    blank = bytes([WHITE]) * (width * height)
    luma = bytearray(blank)
    for r, row in enumerate(rows):
        for c, dark in enumerate(row):
            if not dark:
                continue
            for dy in range(scale):
                start = (top + r * scale + dy) * width + left + c * scale
                luma[start : start + scale] = bytes([BLACK]) * scale
    chroma = bytes([NEUTRAL_CHROMA]) * ((width // 2) * (height // 2) * 2)
    with path.open("wb") as handle:
        handle.write(f"YUV4MPEG2 W{width} H{height} F{fps}:1 Ip A1:1 C420jpeg\n".encode())
        for frame in range(shown + hidden):
            handle.write(b"FRAME\n")
            handle.write(bytes(luma) if frame < shown else blank)
            handle.write(chroma)
    return path
