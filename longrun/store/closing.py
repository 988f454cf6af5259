"""Closing: which items of a task state are done, and the chained `closed_items` rows they become.

The state holds what is open (issue 26): an effect in flight (intent written, outcome `unknown`),
an approval not yet used and not long expired, a scope still in force. Every compare-and-set runs
the state it writes through `split_closed`: what the write closes (a settle, an approval used by an
intent, a scope ended or used up) leaves the state and becomes a `closed_items` row *in the same
statement* as the state version (`longrun.store.state`), so a crash between closing and moving
cannot lose an item: either both are written or neither is.

The rows are hash-chained per run like the other history tables (`longrun.store.chain`); the chain's
count and head are kept in the state itself (`TaskState.closed`), so they move only with a
compare-and-set (which serializes the writers of a run) and the hash-chained state history vouches
for them. Pure: no I/O here; the migration 0009 uses it too.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from longrun.models.canonical import canonical_json, chain_hash
from longrun.models.chain import closed_item_payload
from longrun.models.state import Approval, ClosedItems, Effect, EffectStatus, Scope, TaskState

ClosedKind = Literal["effect", "approval", "scope"]

EXPIRED_GRACE = timedelta(minutes=10)
"""An expired approval or scope stays in the state this long after its expiry, so that the gate
(which judges at the workflow's clock, a little behind the store's) still names it as expired
from the state; after that the gate reads it from the table, with the same verdict."""


@dataclass(frozen=True)
class ClosedItem:
    """One item leaving the state: its kind, its id (action id, approval id, scope id), and the
    item as the state held it."""

    kind: ClosedKind
    item_id: str
    item: dict[str, Any]
    action_hash: str | None = None
    call_ref: str | None = None
    """`<call seq>/<call id>` of the call an approver edited (approvals with an edit)."""


@dataclass(frozen=True)
class SealedItem:
    """A `closed_items` row ready to insert: the item, its number in the run's chain and hashes."""

    item: ClosedItem
    seq: int
    prev_hash: str
    hash: str
    item_text: str


def _effect_closed(e: Effect) -> bool:
    return e.status is not EffectStatus.unknown


def _approval_closed(a: Approval, now: datetime) -> bool:
    return a.used or now >= a.expires_at + EXPIRED_GRACE


def _scope_closed(sc: Scope, now: datetime) -> bool:
    return bool(sc.ended) or sc.uses >= sc.max_uses or now >= sc.expires_at + EXPIRED_GRACE


def split_closed(state: TaskState, now: datetime) -> tuple[TaskState, list[ClosedItem]]:
    """The state with its closed items removed (counts not yet moved: `seal` does that), and
    those items in state order: effects, then approvals, then scopes."""
    items: list[ClosedItem] = []
    for e in state.effects:
        if _effect_closed(e):
            items.append(ClosedItem("effect", e.action_id, e.model_dump(mode="json")))
    for a in state.approvals:
        if _approval_closed(a, now):
            ref = f"{a.edit.call_seq}/{a.edit.call_id}" if a.edit is not None else None
            items.append(ClosedItem("approval", a.id, a.model_dump(mode="json"), action_hash=a.action_hash,
                                    call_ref=ref))
    for sc in state.scopes:
        if _scope_closed(sc, now):
            items.append(ClosedItem("scope", sc.id, sc.model_dump(mode="json")))
    if not items:
        return state, []
    open_state = state.model_copy(update={
        "effects": [e for e in state.effects if not _effect_closed(e)],
        "approvals": [a for a in state.approvals if not _approval_closed(a, now)],
        "scopes": [sc for sc in state.scopes if not _scope_closed(sc, now)],
    })
    return open_state, items


def seal(run_id: str, state: TaskState, items: list[ClosedItem], version: int,
         now: datetime) -> tuple[TaskState, list[SealedItem]]:
    """Number and chain `items` after the state's closed chain head, and move its counts.

    Args:
        state: the state without the items (from `split_closed`), still carrying the counts and
            head of the version it was built from.
        version: the state version whose write closes them.
    """
    closed = state.closed
    counts = closed.model_dump()
    prev, sealed = closed.head, []
    for n, item in enumerate(items, start=closed.count + 1):
        digest = chain_hash(prev, closed_item_payload(run_id, n, item.kind, item.item_id, item.action_hash,
                                                      item.call_ref, item.item, version, now))
        sealed.append(SealedItem(item, n, prev, digest, canonical_json(item.item)))
        prev = digest
        if item.kind == "effect":
            counts["effects_confirmed" if item.item["status"] == "confirmed" else "effects_none"] += 1
        elif item.kind == "approval":
            counts["approvals_used" if item.item["used"] else "approvals_expired"] += 1
            counts["approvals_edited"] += item.call_ref is not None
        else:
            counts["scopes"] += 1
    counts.update(count=closed.count + len(items), head=prev)
    return state.model_copy(update={"closed": ClosedItems(**counts)}), sealed


__all__ = ["EXPIRED_GRACE", "ClosedItem", "ClosedKind", "SealedItem", "closed_item_payload", "seal", "split_closed"]
