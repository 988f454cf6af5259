"""What a pruned body leaves behind, and how readers show it.

A transcript entry's or projection's `content` becomes `{"pruned": {"sha256": ..., "bytes": N,
"at": ISO time}}`: the sha256 and length of the body's stored text (for a transcript entry that is
its canonical JSON, the very text its chain hash was computed over, so a body kept elsewhere, an
export bundle, can be checked against it). A fact's `text` becomes the placeholder line and its
`value` empty. An artifact keeps its row (its name is its sha256, `size` its length) with no bytes.

Readers never fail on a tombstone: they show `[pruned on DATE: sha256 ..., N bytes]` in place of
the body (`placeholder`). Written only by `longrun.store.retention`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

PRUNED_KEY = "pruned"


@dataclass(frozen=True)
class Tombstone:
    """A pruned body: its sha256 (hex), its size in bytes and when it was pruned."""

    sha256: str
    size: int
    at: datetime

    def placeholder(self) -> str:
        """What a reader shows instead of the body."""
        return placeholder(self.at, self.sha256, self.size)


def placeholder(at: datetime, sha256: str, size: int) -> str:
    """`[pruned on 2026-12-02: sha256 1a2b3c4d5e6f…, 1,234 bytes]`."""
    return f"[pruned on {at.date().isoformat()}: sha256 {sha256[:12]}…, {size:,} bytes]"


def tombstone_of(content: Any) -> Tombstone | None:
    """The tombstone a stored `content` is, or None when it is a body."""
    if not isinstance(content, dict) or set(content) != {PRUNED_KEY}:
        return None
    mark = content[PRUNED_KEY]
    if not isinstance(mark, dict):
        return None
    try:
        return Tombstone(sha256=str(mark["sha256"]), size=int(mark["bytes"]), at=datetime.fromisoformat(str(mark["at"])))
    except (KeyError, TypeError, ValueError):
        return None


__all__ = ["PRUNED_KEY", "Tombstone", "placeholder", "tombstone_of"]
