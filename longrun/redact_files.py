"""Files that hold a private key: a reader shows none of their lines, whatever the slice.

The `private_key` pattern of `longrun.redact` needs a key's BEGIN line, so a slice of a key file
past it (`read_file` with an offset, `grep` for base64 lines) would show the key's body to the
model, the transcript and the artifacts. So every reader that shows file content asks
`file_holds_private_key` of the whole file it has open and shows `PRIVATE_KEY_FILE` and
`private_key_note` instead: `read_file` and `grep` (longrun.tools.files, longrun.tools.search),
and the approver's diff (`holds_private_key`, longrun.client.approval_view).
Tests: tests/test_redact_files.py.
"""

from __future__ import annotations

import re
from typing import BinaryIO

PRIVATE_KEY_FILE = "[REDACTED:private_key_file]"
"""What a reader shows instead of any line of a file that holds a private key."""
PRIVATE_KEY_SCAN_BYTES = 64 << 20
"""A file up to this size is scanned whole; a larger one through what was shown plus a megabyte
(more than any key block spans), so a read of its first lines does not read gigabytes."""
_KEY_WINDOW = 1 << 20
_CHUNK = 1 << 16
_OVERLAP = 256  # longer than any mark, so a mark across two chunks is found
# An armor line of a private key block (PEM, PKCS#8, encrypted, OpenSSH, PGP) that is a line of its
# own: followed by a line break, or, an END line, preceded by one (indented in YAML). A line that
# holds the armor in quotes (code that recognises keys, `"-----BEGIN ...-----"`) is not one. Then
# the first base64 characters of an OpenSSH key's body ("openssh-key-v1"), and a PuTTY key file.
_KEY_MARK = (
    r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----[ \t]{0,8}\r?\n"
    r"|\n[ \t]{0,64}-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    r"|b3BlbnNzaC1rZXktdjE"
    r"|PuTTY-User-Key-File-[0-9]{1,3}: "
)
_KEY_MARK_STR = re.compile(_KEY_MARK)
_KEY_MARK_BYTES = re.compile(_KEY_MARK.encode())
_KEY_HINTS = (b"PRIVATE KEY", b"b3BlbnNzaC1rZXktdjE", b"PuTTY-User-Key-File-")


def holds_private_key(data: str | bytes) -> bool:
    """Whether `data` (a whole file, or the part of it a reader holds) contains a private key.

    A reader that shows part of a file asks this of the whole file: the `private_key` pattern
    needs a key's BEGIN line, so a slice past it (`read_file` with an offset, `grep` for base64 lines)
    would show the key's body. Linear: substring tests, then one regex without nested repetition.
    """
    if isinstance(data, str):
        return any(h.decode() in data for h in _KEY_HINTS) and _KEY_MARK_STR.search(data) is not None
    return any(h in data for h in _KEY_HINTS) and _KEY_MARK_BYTES.search(data) is not None


def private_key_note(path: str) -> str:
    """The note a reader adds where it hid a file's lines (`PRIVATE_KEY_FILE`)."""
    return (f"[{path} holds a private key, so none of its lines is shown, whatever the offset or pattern: "
            "a run has no use for a key's text. Use the key through a command the run allows, "
            "or ask a human if its content matters]")


def file_holds_private_key(f: BinaryIO, shown_until: int) -> bool:
    """Whether the open file `f` holds a private key, scanned in bounded chunks from its start.

    Args:
        f: the file a reader has open (binary, seekable); its position is restored.
        shown_until: the byte offset up to which the reader read what it shows. The scan covers
            the whole file up to PRIVATE_KEY_SCAN_BYTES, and in any case this offset plus a
            megabyte, so a key around what is shown is always found.
    """
    stop = max(PRIVATE_KEY_SCAN_BYTES, shown_until + _KEY_WINDOW)
    pos = f.tell()
    try:
        f.seek(0)
        tail, done = b"", 0
        while done < stop:
            chunk = f.read(min(_CHUNK, stop - done))
            if not chunk:
                return False
            done += len(chunk)
            data = tail + chunk
            if holds_private_key(data):
                return True
            tail = data[-_OVERLAP:]
        return False
    finally:
        f.seek(pos)
