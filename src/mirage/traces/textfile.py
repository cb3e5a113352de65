"""Loading a trace file as numbered text lines, refusing files that are not text."""

from __future__ import annotations

import bz2
import gzip
import lzma
from dataclasses import dataclass
from pathlib import Path

from mirage.errors import TraceFormatError

# Bytes inspected to decide whether a file is binary; NUL never occurs in a text trace.
_SNIFF_BYTES = 1 << 16
# Compressed text is read as the text it holds, recognised by its magic bytes (not its name).
_COMPRESSED = {b"\xfd7zXZ\x00": ("xz", lzma.decompress), b"\x1f\x8b": ("gzip", gzip.decompress),
               b"BZh": ("bzip2", bz2.decompress)}


@dataclass(frozen=True)
class Line:
    number: int  # 1-based, as an editor shows it
    text: str


def read_lines(path: str | Path) -> list[Line]:
    """All non-blank lines of ``path`` with their line numbers.

    A file compressed with xz, gzip or bzip2 is read as the text it holds. Raises
    TraceFormatError for a missing, unreadable, corrupt, binary or empty file.
    """
    p = Path(path)
    if not p.exists():
        raise TraceFormatError(p, "file not found", "check the path (or the config's `path:`)")
    if p.is_dir():
        raise TraceFormatError(p, "is a directory, not a trace file", "give the trace file itself")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise TraceFormatError(p, f"cannot be read ({exc.strerror})", "check its permissions") from None
    data = _decompressed(p, data)
    nul = data.find(b"\x00", 0, _SNIFF_BYTES)
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise TraceFormatError(
            p,
            "looks binary (contains NUL bytes), not a text trace",
            "give the uncompressed text file (gunzip/xz -d it first); supported formats: "
            "TACC trace text, sacct --parsable2 dump, SWF",
            line=line,
        )
    # Job names may carry bytes from any locale; keep the row, mark the odd bytes.
    text = data.decode("utf-8", errors="replace")
    lines = [
        Line(i, raw.rstrip("\r"))
        for i, raw in enumerate(text.split("\n"), start=1)
        if raw.strip()
    ]
    if not lines:
        raise TraceFormatError(
            p, "is empty (no non-blank line)", "check that the download or sacct dump completed"
        )
    return lines


def _decompressed(p: Path, data: bytes) -> bytes:
    """``data`` decompressed when it starts with an xz, gzip or bzip2 header, else as it is."""
    for magic, (name, decompress) in _COMPRESSED.items():
        if data.startswith(magic):
            try:
                return decompress(data)
            except (lzma.LZMAError, OSError, EOFError, ValueError) as exc:
                raise TraceFormatError(p, f"is a truncated or corrupt {name} file ({exc})",
                                       "download or copy it again, or give the uncompressed "
                                       "text") from None
    return data
