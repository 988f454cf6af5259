"""The hash chains: what each row's hash covers, and how a chain is checked.

Pure (no database driver imported): the store writes and verifies with it, and so does the
evidence bundle verifier (`longrun.evidence.verify`), which must run where no database is.

A row's hash is `chain_hash(prev_hash, payload)` where the payload is every column of the row
except the two hash columns, with the timestamp as an ISO string in UTC. Changing any column,
removing a row in the middle (the next row's `prev_hash` no longer matches) or removing the tail
(the last hash is no longer the head stored on `runs`) is detected.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from longrun.models.canonical import GENESIS_HASH, chain_hash


def timestamp(value: datetime) -> str:
    """The canonical text of a timestamp inside a hashed payload (UTC, microseconds)."""
    return value.astimezone(UTC).isoformat()


def state_version_payload(
    run_id: str, version: int, state: Any, actor: str, reason: str, created_at: datetime
) -> dict[str, Any]:
    return {
        "table": "task_state_versions",
        "run_id": run_id,
        "version": version,
        "state": state,
        "actor": actor,
        "reason": reason,
        "created_at": timestamp(created_at),
    }


def transcript_payload(
    run_id: str,
    seq: int,
    role: str,
    content: Any,
    token_estimate: int,
    usage: Any,
    turn: int | None,
    created_at: datetime,
) -> dict[str, Any]:
    return {
        "table": "transcript_entries",
        "run_id": run_id,
        "seq": seq,
        "role": role,
        "content": content,
        "token_estimate": token_estimate,
        "usage": usage,
        "turn": turn,
        "created_at": timestamp(created_at),
    }


def audit_payload(run_id: str, seq: int, kind: str, event: Any, actor: str, created_at: datetime) -> dict[str, Any]:
    return {
        "table": "audit_events",
        "run_id": run_id,
        "seq": seq,
        "kind": kind,
        "event": event,
        "actor": actor,
        "created_at": timestamp(created_at),
    }


def closed_item_payload(run_id: str, seq: int, kind: str, item_id: str, action_hash: str | None,
                        call_ref: str | None, item: Any, state_version: int, created_at: datetime) -> dict[str, Any]:
    """What a `closed_items` row's hash covers: every column but the two hash columns."""
    return {
        "table": "closed_items", "run_id": run_id, "seq": seq, "kind": kind, "item_id": item_id,
        "action_hash": action_hash, "call_ref": call_ref, "item": item, "state_version": state_version,
        "created_at": timestamp(created_at),
    }


@dataclass(frozen=True)
class ChainRow:
    """A stored row reduced to what verification needs. `payload` None: the row's body was pruned
    (`longrun.store.tombstone`), so its own hash cannot be recomputed; it is still checked to link
    to the row before it, and the row after it (or the head on `runs`) vouches for its hash."""

    number: int
    payload: dict[str, Any] | None
    prev_hash: str
    hash: str


@dataclass(frozen=True)
class ChainProblem:
    row: int
    reason: str


def check_chain(rows: Iterable[ChainRow], head_hash: str, head_count: int) -> ChainProblem | None:
    """The first problem of one chain, or None when it verifies.

    Args:
        rows: the chain's rows ordered by their number.
        head_hash: the hash of the last row, as recorded on `runs` at write time.
        head_count: the number of rows, as recorded on `runs` at write time.
    """
    expected_prev = GENESIS_HASH
    count = 0
    for row in rows:
        count += 1
        if row.number != count:
            return ChainProblem(count, f"row {count} is missing (the next row present is {row.number})")
        if row.prev_hash != expected_prev:
            return ChainProblem(
                row.number,
                f"prev_hash {row.prev_hash[:12]}... does not match the hash of the row before "
                f"({expected_prev[:12]}...): a row was removed or rewritten",
            )
        actual = row.hash if row.payload is None else chain_hash(row.prev_hash, row.payload)
        if actual != row.hash:
            return ChainProblem(
                row.number,
                f"content does not match its stored hash {row.hash[:12]}... (recomputed {actual[:12]}...): "
                "the row was altered after it was written",
            )
        expected_prev = row.hash
    if count < head_count:
        return ChainProblem(
            count + 1,
            f"the chain ends after row {count} but {head_count} rows were written "
            f"(head hash {head_hash[:12]}...): rows were deleted from the tail",
        )
    if count > head_count:
        return ChainProblem(
            head_count + 1,
            f"the chain has {count} rows but only {head_count} were written through the store: "
            "rows were added behind its back",
        )
    if expected_prev != head_hash:
        return ChainProblem(
            count,
            f"the last row's hash {expected_prev[:12]}... is not the recorded head {head_hash[:12]}...: "
            "the tail was replaced",
        )
    return None
