"""Reading a run's closed items: what its task state closed and moved to `closed_items`.

The gate's rules, reconcile, commit trailers, `status`, the console and the audit summary read
them here when the state no longer holds them (rules: `longrun.store.closing`). Every lookup is
one indexed statement; callers skip it when the state's counts say there is nothing to find
(`TaskState.closed`), so a run that closed nothing pays nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import psycopg
from pydantic import ValidationError

from longrun.errors import StoreError
from longrun.models.state import Approval, Effect, Scope, TaskState
from longrun.store.core import StoreCore

_T = TypeVar("_T", Effect, Approval, Scope)
_COLUMNS = "seq, kind, item_id, item, state_version, created_at"


@dataclass(frozen=True)
class ClosedItemRecord:
    """A `closed_items` row: the item as the state held it, and the version that closed it."""

    seq: int
    kind: str
    item_id: str
    item: dict[str, Any]
    state_version: int
    created_at: datetime


class ClosedMixin(StoreCore):
    """Lookups in `closed_items`."""

    def _closed(self, run_id: str, where: str, params: dict[str, Any]) -> list[ClosedItemRecord]:
        sql = f"SELECT {_COLUMNS} FROM closed_items WHERE run_id = %(run_id)s {where} ORDER BY seq"

        def read(c: psycopg.Connection) -> list[ClosedItemRecord]:
            return [ClosedItemRecord(*row) for row in c.execute(sql, {"run_id": run_id, **params})]

        return self._autocommit("closed_items", read)

    def closed_items(self, run_id: str, kind: str | None = None) -> list[ClosedItemRecord]:
        """Every closed item of the run (of one kind: `effect`, `approval`, `scope`), oldest first."""
        if kind is None:
            return self._closed(run_id, "", {})
        return self._closed(run_id, "AND kind = %(kind)s", {"kind": kind})

    def closed_effect(self, run_id: str, action_id: str) -> Effect | None:
        """The settled effect with this action id, if the state closed it."""
        rows = self._closed(run_id, "AND item_id = %(id)s AND kind = 'effect'", {"id": action_id})
        return _parse(Effect, rows[-1], run_id) if rows else None

    def closed_approvals(self, run_id: str, action_hash: str) -> list[Approval]:
        """The used or expired approvals bound to this action hash."""
        rows = self._closed(run_id, "AND action_hash = %(h)s AND kind = 'approval'", {"h": action_hash})
        return [_parse(Approval, r, run_id) for r in rows]

    def closed_approval(self, run_id: str, approval_id: str) -> Approval | None:
        rows = self._closed(run_id, "AND item_id = %(id)s AND kind = 'approval'", {"id": approval_id})
        return _parse(Approval, rows[-1], run_id) if rows else None

    def closed_edited_approval(self, run_id: str, call_seq: int, call_id: str) -> Approval | None:
        """The closed approval whose approver edited this call (None: no closed one did)."""
        rows = self._closed(run_id, "AND call_ref = %(ref)s AND kind = 'approval'", {"ref": f"{call_seq}/{call_id}"})
        return _parse(Approval, rows[-1], run_id) if rows else None

    def closed_scopes(self, run_id: str) -> list[Scope]:
        """Every scope the run closed (ended, used up, long expired), oldest first."""
        return [_parse(Scope, r, run_id) for r in self.closed_items(run_id, "scope")]

    def all_effects(self, run_id: str, state: TaskState | None = None) -> list[Effect]:
        """Every effect of the run: the closed ones, then those in flight in `state` (default:
        the head)."""
        state = state or self.load_state(run_id)  # type: ignore[attr-defined]
        closed = [_parse(Effect, r, run_id) for r in self.closed_items(run_id, "effect")] if state.closed.effects else []
        return [*closed, *state.effects]

    def all_scopes(self, run_id: str, state: TaskState | None = None) -> list[Scope]:
        """Every scope of the run: the closed ones, then those in force in `state` (default: the head)."""
        state = state or self.load_state(run_id)  # type: ignore[attr-defined]
        return [*(self.closed_scopes(run_id) if state.closed.scopes else []), *state.scopes]

    def all_approvals(self, run_id: str, state: TaskState | None = None) -> list[Approval]:
        """Every approval of the run: the closed ones, then the open ones in `state` (default: the head)."""
        state = state or self.load_state(run_id)  # type: ignore[attr-defined]
        closed = self.closed_items(run_id, "approval") if state.closed.approvals else []
        return [*(_parse(Approval, r, run_id) for r in closed), *state.approvals]


def _parse(model: type[_T], row: ClosedItemRecord, run_id: str) -> _T:
    try:
        return model.model_validate(row.item)
    except ValidationError as exc:
        raise StoreError(f"closed item {row.seq} of run {run_id} does not parse as {model.__name__}: {exc}") from exc


__all__ = ["ClosedItemRecord", "ClosedMixin"]
