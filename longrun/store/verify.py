"""Verification of a run's hash chains (state versions, transcript, audit against the heads
recorded on `runs`; closed items against the count and head in the head state), and of the head
state against its last recorded version.

Read-only: it reports the first bad row (table, row number, why) and changes nothing. What each
row's hash covers, and how one chain is checked, is in `longrun.store.chain`.

A pruned run (`longrun.store.retention`) verifies too: a transcript entry whose body is a
tombstone is checked to link into its chain (its hash is vouched for by the next row or the head),
and the number of tombstones must be the number the audited `prune` events removed.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from longrun.errors import RunNotFoundError
from longrun.models import canonical_json
from longrun.models.state import ClosedItems
from longrun.store.chain import ChainRow, audit_payload, check_chain, state_version_payload, transcript_payload
from longrun.store.closing import closed_item_payload
from longrun.store.core import StoreCore
from longrun.store.records import ChainVerdict
from longrun.store.tables import (
    AuditEventRow,
    RunRow,
    TaskStateRow,
    TaskStateVersionRow,
)
from longrun.store.tables_closed import ClosedItemRow
from longrun.store.tombstone import tombstone_of
from longrun.store.transcript import VISIBLE_ENTRIES

_ENTRIES_SQL = VISIBLE_ENTRIES + """
SELECT run_id, seq, role, content, token_estimate, usage, turn, created_at, prev_hash, hash FROM te ORDER BY seq
"""


def pruned_note(prunes: list[dict[str, Any]]) -> str:
    """`; 40 bodies pruned (12 transcript_entries, ...), their hashes kept`, or "" for a whole run."""
    counts: dict[str, int] = {}
    for p in prunes:
        for table, n in (p.get("pruned") or {}).items():
            counts[table] = counts.get(table, 0) + int(n)
    total = sum(counts.values())
    if not prunes:
        return ""
    detail = ", ".join(f"{n} {t}" for t, n in sorted(counts.items()) if n)
    return f"; {total} bodies pruned ({detail or 'none'}), their hashes and tombstones kept"


class VerifyMixin(StoreCore):
    """`verify_chain`: does a run's history still say what was written?"""

    def verify_chain(self, run_id: str) -> ChainVerdict:
        """Check the run's three hash chains against their rows and the heads stored on `runs`.

        Reads everything in one REPEATABLE READ snapshot so concurrent appends cannot produce a
        false alarm.

        Returns:
            `ChainVerdict(ok=True, ...)`, or the first bad row: table, row number and why.

        Raises:
            RunNotFoundError: no run has this id.
        """

        def tx(s: Session) -> ChainVerdict:
            s.connection(execution_options={"isolation_level": "REPEATABLE READ"})
            run = s.get(RunRow, run_id)
            if run is None:
                raise RunNotFoundError(run_id)

            def verdict(table: str, row: int, reason: str) -> ChainVerdict:
                return ChainVerdict(ok=False, table=table, row=row, reason=reason, run_id=run_id)

            versions = list(s.scalars(select(TaskStateVersionRow).where(TaskStateVersionRow.run_id == run_id)
                                      .order_by(TaskStateVersionRow.version)))
            problem = check_chain(
                (ChainRow(r.version, state_version_payload(run_id, r.version, r.state, r.actor, r.reason,
                                                           r.created_at), r.prev_hash, r.hash) for r in versions),
                run.state_head, run.state_count,
            )
            if problem:
                return verdict("task_state_versions", problem.row, problem.reason)

            # a fork's transcript starts with its parent's entries (by reference): each is hashed
            # under the run that wrote it, and the fork's own first entry chains on the last of them.
            # A pruned body (a tombstone) is checked to link into the chain; only the run's own
            # tombstones are weighed against its own audited prunes.
            entries = s.connection().exec_driver_sql(_ENTRIES_SQL, {"run_id": run_id})
            tombstones: list[int] = []

            def transcript_rows(rows: Iterable[Any]) -> Iterator[ChainRow]:
                for r in rows:
                    if tombstone_of(r.content) is not None:
                        if r.run_id == run_id:
                            tombstones.append(r.seq)
                        yield ChainRow(r.seq, None, r.prev_hash, r.hash)
                    else:
                        yield ChainRow(r.seq, transcript_payload(r.run_id, r.seq, r.role, r.content, r.token_estimate,
                                                                 r.usage, r.turn, r.created_at), r.prev_hash, r.hash)

            problem = check_chain(transcript_rows(entries), run.transcript_head, run.transcript_count)
            if problem:
                return verdict("transcript_entries", problem.row, problem.reason)

            events = s.scalars(select(AuditEventRow).where(AuditEventRow.run_id == run_id)
                               .order_by(AuditEventRow.seq))
            prunes: list[dict[str, Any]] = []

            def audit_rows(rows: Iterable[AuditEventRow]) -> Iterator[ChainRow]:
                for r in rows:
                    if r.kind == "retention" and isinstance(r.event, dict) and r.event.get("action") == "prune":
                        prunes.append(r.event)
                    yield ChainRow(r.seq, audit_payload(run_id, r.seq, r.kind, r.event, r.actor, r.created_at),
                                   r.prev_hash, r.hash)

            problem = check_chain(audit_rows(events), run.audit_head, run.audit_count)
            if problem:
                return verdict("audit_events", problem.row, problem.reason)
            audited = sum(int((p.get("pruned") or {}).get("transcript_entries", 0)) for p in prunes)
            if len(tombstones) != audited:
                return verdict(
                    "transcript_entries", tombstones[0] if tombstones else 0,
                    f"{len(tombstones)} entries are tombstones (pruned bodies) but the audit records {audited} pruned "
                    "by `longrun prune`: a body was removed, or a tombstone written, outside it",
                )

            head = s.get(TaskStateRow, run_id)
            last = versions[-1] if versions else None
            if head is None or last is None or head.state_version != last.version \
                    or canonical_json(head.state) != canonical_json(last.state):
                return verdict(
                    "task_states", head.state_version if head else 0,
                    "the head state does not equal the last recorded state version: it was changed outside "
                    "compare-and-set",
                )
            closed_head = ClosedItems.model_validate(head.state.get("closed") or {})
            closed = s.scalars(select(ClosedItemRow).where(ClosedItemRow.run_id == run_id).order_by(ClosedItemRow.seq))
            problem = check_chain(
                (ChainRow(r.seq, closed_item_payload(run_id, r.seq, r.kind, r.item_id, r.action_hash, r.call_ref, r.item,
                                                     r.state_version, r.created_at), r.prev_hash, r.hash)
                 for r in closed),
                closed_head.head, closed_head.count,
            )
            if problem:
                return verdict("closed_items", problem.row, problem.reason)
            return ChainVerdict(
                ok=True, table=None, row=None, run_id=run_id,
                reason=f"{run.state_count} state versions, {run.transcript_count} transcript entries, "
                f"{run.audit_count} audit events" + (f", {closed_head.count} closed items" if closed_head.count else "")
                + pruned_note(prunes),
            )

        return self._tx("verify_chain", tx)
