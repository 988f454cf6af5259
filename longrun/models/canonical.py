"""Canonical JSON and the hashes built on it.

Hash chains and approval bindings must give the same digest on every machine and in every
process, so they are computed over one canonical form: sorted keys, no whitespace, UTF-8.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> str:
    """Serialize `value` deterministically (sorted keys, compact separators, no NaN)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=str)


def sha256_hex(data: str | bytes) -> str:
    """Hex SHA-256 of text (UTF-8) or bytes."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def chain_hash(prev_hash: str, row: Any) -> str:
    """`sha256(prev_hash || canonical_json(row))`: one link of a tamper-evident chain."""
    return sha256_hex(prev_hash + canonical_json(row))


GENESIS_HASH = "0" * 64
"""The `prev_hash` of the first row of every chain."""


def action_hash(tool: str, arguments: dict[str, Any], state_version: int) -> str:
    """Binds an approval to one exact action: `sha256(tool, canonical args, state_version)`."""
    return sha256_hex(canonical_json({"tool": tool, "arguments": arguments, "state_version": state_version}))
