"""Bytes to text for tool output: bounded reads, replacement decoding, no NUL characters.

Tool output ends up in Postgres text columns (which refuse NUL) and in model requests (which
want valid UTF-8), so every tool turns bytes into text here and says when it had to repair them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

SNIFF_BYTES = 8192
"""A file whose first SNIFF_BYTES hold a NUL byte is treated as binary."""

MAX_LINE_BYTES = 4000
"""Longer lines are cut (the rest of the line is skipped, never held in memory)."""


def looks_binary(head: bytes) -> bool:
    return b"\x00" in head[:SNIFF_BYTES]


def decode(data: bytes) -> tuple[str, bool]:
    """Decode UTF-8 with replacement; NUL becomes U+FFFD. Returns (text, repaired?)."""
    try:
        text = data.decode("utf-8")
        repaired = False
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
        repaired = True
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
        repaired = True
    return text, repaired


def bounded_lines(f: BinaryIO, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[tuple[bytes, bool]]:
    """Yield (line without its newline, was_cut) from a binary file, holding at most
    `max_line_bytes` of any one line in memory."""
    while True:
        chunk = f.readline(max_line_bytes + 1)
        if not chunk:
            return
        if chunk.endswith(b"\n"):
            yield chunk[:-1].removesuffix(b"\r"), False
            continue
        if len(chunk) <= max_line_bytes:  # last line, no newline
            yield chunk, False
            return
        # Over-long line: keep the head, skip the rest of it in bounded reads.
        head = chunk[:max_line_bytes]
        while not chunk.endswith(b"\n"):
            chunk = f.readline(65536)
            if not chunk:
                break
        yield head, True


def cap_bytes(data: bytes, limit: int) -> tuple[bytes, bool]:
    """Cut `data` to `limit` bytes, backing off to a UTF-8 character boundary."""
    if len(data) <= limit:
        return data, False
    cut = limit
    while cut > 0 and cut > limit - 4 and (data[cut] & 0xC0) == 0x80:
        cut -= 1
    return data[:cut], True
