"""Retention: pinning a run, and pruning the bodies of finished runs while keeping their proofs.

Rules:

- prunable means: finished (`completed`, `failed`, `cancelled`) before the cutoff (`runs.updated_at`,
  which the last status change set), not pinned, not pruned yet, its parent (if any) finished and
  not pinned, none of its subagents unfinished, and none of its forks (nor their forks) unfinished
  or pinned: a family is kept whole while any of it runs (a run reads its parent's and children's
  artifacts, and a fork reads its ancestors' transcript entries by reference) or is pinned;
- pruning replaces bodies by tombstones (`longrun.store.tombstone`): transcript entries' content,
  projections' content, facts' text and value, and the bytes of the run's artifacts that no
  unpruned run links to. It keeps every row, every hash and prev_hash, the task state and all its
  versions, the audit log, closed items, instructions, approvers' edits and the run's tools: what
  `audit --verify` and the decision check need;
- one transaction per run, which locks the `runs` row, re-checks that the run is prunable, writes
  the tombstones, sets `runs.pruned_at` and appends a `retention` audit event (`prune`, with the
  counts) on the audit chain: a kill at any moment leaves the run whole or pruned, never between;
- pruning needs the schema owner: the app role may not UPDATE these tables, and the trigger
  allows an owner's UPDATE only with `longrun.prune` set for the transaction and only of the body
  columns (migration 0014);
- pin and unpin are one transaction too (the flag and its audit event), and need only the app role.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import psycopg

from longrun.errors import RunNotFoundError
from longrun.models import chain_hash, utcnow
from longrun.models.audit import RunRetention
from longrun.store.audit import AuditMixin
from longrun.store.chain import audit_payload
from longrun.store.core import InvalidInputError, fetch, fetch_one

FINISHED = ("completed", "failed", "cancelled")

_PRUNABLE = """
    r.status IN ('completed', 'failed', 'cancelled') AND r.updated_at < %(cutoff)s AND NOT r.pinned
    AND r.pruned_at IS NULL
    AND NOT EXISTS (SELECT FROM runs p WHERE p.run_id = r.parent_run_id
                    AND (p.pinned OR p.status NOT IN ('completed', 'failed', 'cancelled')))
    AND NOT EXISTS (SELECT FROM runs c WHERE c.parent_run_id = r.run_id
                    AND c.status NOT IN ('completed', 'failed', 'cancelled'))
    AND NOT EXISTS (
        WITH RECURSIVE forks(run_id) AS (
            SELECT l.run_id FROM run_lineage l WHERE l.parent_run_id = r.run_id
            UNION SELECT l.run_id FROM run_lineage l JOIN forks f ON l.parent_run_id = f.run_id
        )
        SELECT FROM forks f JOIN runs fr ON fr.run_id = f.run_id
        WHERE fr.pinned OR fr.status NOT IN ('completed', 'failed', 'cancelled'))
"""

_FREED_ARTIFACTS = """
    SELECT a.sha256, a.size FROM artifacts a
    WHERE a.pruned_at IS NULL
      AND a.sha256 IN (SELECT l.sha256 FROM run_artifacts l WHERE l.run_id = %(run_id)s)
      AND NOT EXISTS (SELECT FROM run_artifacts o JOIN runs x ON x.run_id = o.run_id
                      WHERE o.sha256 = a.sha256 AND o.run_id <> ALL(%(batch)s) AND x.pruned_at IS NULL)
"""
"""The run's artifacts whose every linking run is pruned or in `batch` (the runs pruned together)."""

_SIZES_SQL = f"""
SELECT
  (SELECT count(*) FROM transcript_entries t WHERE t.run_id = %(run_id)s) AS transcript_entries,
  (SELECT coalesce(sum(octet_length(t.content::text)), 0) FROM transcript_entries t
    WHERE t.run_id = %(run_id)s) AS transcript_bytes,
  (SELECT count(*) FROM projections p WHERE p.run_id = %(run_id)s) AS projections,
  (SELECT coalesce(sum(octet_length(p.content::text)), 0) FROM projections p WHERE p.run_id = %(run_id)s)
    AS projection_bytes,
  (SELECT count(*) FROM facts f WHERE f.run_id = %(run_id)s) AS facts,
  (SELECT coalesce(sum(octet_length(f.text) + octet_length(f.value)), 0) FROM facts f WHERE f.run_id = %(run_id)s)
    AS fact_bytes,
  (SELECT count(*) FROM ({_FREED_ARTIFACTS}) z) AS artifacts,
  (SELECT coalesce(sum(z.size), 0) FROM ({_FREED_ARTIFACTS}) z) AS artifact_bytes
"""

_CANDIDATES_SQL = f"""
SELECT r.run_id, r.status, r.updated_at AS finished_at FROM runs r WHERE {_PRUNABLE}
ORDER BY r.updated_at, r.run_id LIMIT %(limit)s
"""

_LOCK_SQL = f"""
SELECT r.run_id, r.audit_count, r.audit_head, ({_PRUNABLE}) AS prunable, r.pinned, r.status, r.pruned_at
FROM runs r WHERE r.run_id = %(run_id)s FOR UPDATE
"""

_TOMBSTONE = """{kind}_build_object('pruned', {kind}_build_object(
    'sha256', encode(sha256(convert_to(content::text, 'UTF8')), 'hex'),
    'bytes', octet_length(content::text), 'at', %(at)s::text))"""

_PRUNE_TRANSCRIPT_SQL = f"""
UPDATE transcript_entries SET content = {_TOMBSTONE.format(kind="json")}
WHERE run_id = %(run_id)s AND NOT (content::jsonb ? 'pruned')
RETURNING (content->'pruned'->>'bytes')::bigint AS bytes
"""

_PRUNE_PROJECTIONS_SQL = f"""
UPDATE projections SET content = {_TOMBSTONE.format(kind="jsonb")}
WHERE run_id = %(run_id)s AND NOT (content ? 'pruned')
RETURNING (content->'pruned'->>'bytes')::bigint AS bytes
"""

_PRUNE_FACTS_SQL = """
UPDATE facts f SET value = '',
    text = '[pruned on ' || %(day)s || ': sha256 '
        || left(encode(sha256(convert_to(f.text || f.value, 'UTF8')), 'hex'), 12) || '…, '
        || (octet_length(f.text) + octet_length(f.value)) || ' bytes]'
FROM facts old
WHERE f.run_id = %(run_id)s AND old.run_id = f.run_id AND old.seq = f.seq AND f.text NOT LIKE '[pruned on %%'
RETURNING octet_length(old.text) + octet_length(old.value) AS bytes
"""

_PRUNE_ARTIFACTS_SQL = f"""
UPDATE artifacts SET data = ''::bytea, pruned_at = %(now)s
WHERE sha256 IN (SELECT sha256 FROM ({_FREED_ARTIFACTS}) z)
RETURNING size AS bytes
"""

_AUDIT_SQL = """
WITH upd AS (
    UPDATE runs SET audit_head = %(hash)s, audit_count = %(seq)s, {flag} = %(flag)s
    WHERE run_id = %(run_id)s AND audit_head = %(prev)s AND audit_count = %(seq)s - 1
    RETURNING run_id
)
INSERT INTO audit_events (run_id, seq, kind, event, actor, created_at, prev_hash, hash)
SELECT run_id, %(seq)s, %(kind)s, %(event)s::json, %(actor)s, %(now)s, %(prev)s, %(hash)s FROM upd
RETURNING seq
"""
"""The retention event, and the run's flag it records (`pinned`, or `pruned_at`: only the column
the caller may write is named), in one statement on the locked head."""


@dataclass(frozen=True)
class PruneCandidate:
    """A run `prune` would take, and what would go: bodies per table and their bytes."""

    run_id: str
    status: str
    finished_at: datetime
    bodies: dict[str, int] = field(default_factory=dict)
    bytes: dict[str, int] = field(default_factory=dict)

    @property
    def bytes_freed(self) -> int:
        return sum(self.bytes.values())


@dataclass(frozen=True)
class PruneOutcome:
    """What pruning one run did: `pruned` False when it was no longer prunable (`reason` says why)."""

    run_id: str
    pruned: bool
    reason: str = ""
    bodies: dict[str, int] = field(default_factory=dict)
    bytes_freed: int = 0


class RetentionMixin(AuditMixin):
    """`prune_candidates`, `prune_run` (schema owner) and `set_pinned`."""

    def prune_candidates(self, finished_before: datetime, *, limit: int = 10_000) -> list[PruneCandidate]:
        """The runs prunable with this cutoff, oldest first, with the bodies and bytes that would go
        (an artifact counts when every run linking it is pruned or among these runs)."""

        def read(c: psycopg.Connection) -> list[PruneCandidate]:
            rows = fetch(c, _CANDIDATES_SQL, {"cutoff": finished_before, "limit": limit})
            batch = [r.run_id for r in rows]
            out = []
            for r in rows:
                sizes = fetch_one(c, _SIZES_SQL, {"run_id": r.run_id, "batch": batch})
                assert sizes is not None
                out.append(PruneCandidate(
                    r.run_id, r.status, r.finished_at,
                    bodies={t: int(getattr(sizes, t)) for t in ("transcript_entries", "projections", "facts",
                                                               "artifacts")},
                    bytes={"transcript_entries": int(sizes.transcript_bytes), "projections": int(sizes.projection_bytes),
                           "facts": int(sizes.fact_bytes), "artifacts": int(sizes.artifact_bytes)}))
            return out

        return self._autocommit("prune_candidates", read)

    def prune_run(self, run_id: str, finished_before: datetime, *, actor: str) -> PruneOutcome:
        """Replace the bodies of one run by tombstones, in one transaction (see the module's rules).
        Idempotent: a run pruned already, or no longer prunable, is left alone and says why.

        Raises:
            RunNotFoundError: no such run.
            StoreError: permission denied (the app role cannot prune: use the owner's URL)."""
        now = utcnow()

        def tx(c: psycopg.Connection) -> PruneOutcome:
            with c.transaction():
                head = fetch_one(c, _LOCK_SQL, {"run_id": run_id, "cutoff": finished_before})
                if head is None:
                    raise RunNotFoundError(run_id)
                if not head.prunable:
                    return PruneOutcome(run_id, False, _why_kept(head, finished_before))
                c.execute("SELECT set_config('longrun.prune', 'on', true)")
                params = {"run_id": run_id, "at": now.isoformat(), "day": now.date().isoformat(), "now": now,
                          "batch": [run_id]}
                freed: dict[str, list[int]] = {}
                for table, sql in (("transcript_entries", _PRUNE_TRANSCRIPT_SQL), ("projections", _PRUNE_PROJECTIONS_SQL),
                                   ("facts", _PRUNE_FACTS_SQL), ("artifacts", _PRUNE_ARTIFACTS_SQL)):
                    freed[table] = [int(r[0]) for r in c.execute(sql, params).fetchall()]
                bodies = {t: len(v) for t, v in freed.items()}
                total = sum(sum(v) for v in freed.values())
                event = RunRetention(action="prune", by=actor, pruned=bodies, bytes_freed=total)
                self._append_retention(c, head, event, actor, now, flag=("pruned_at", now))
                return PruneOutcome(run_id, True, bodies=bodies, bytes_freed=total)

        try:
            return self._autocommit("prune_run", tx)
        finally:
            self._forget_head(run_id, "audit")

    def set_pinned(self, run_id: str, pinned: bool, *, actor: str) -> bool:
        """Pin (never pruned) or unpin a run, with its `retention` audit event, in one transaction.

        Returns:
            False when the run was already so (nothing written).

        Raises:
            RunNotFoundError: no such run.
            InvalidInputError: pinning a run already pruned (its bodies are gone)."""
        now = utcnow()

        def tx(c: psycopg.Connection) -> bool:
            with c.transaction():
                head = fetch_one(c, _LOCK_SQL, {"run_id": run_id, "cutoff": now})
                if head is None:
                    raise RunNotFoundError(run_id)
                if head.pinned == pinned:
                    return False
                if pinned and head.pruned_at is not None:
                    raise InvalidInputError(f"run {run_id} was pruned on {head.pruned_at.date()}: its bodies are gone, "
                                            "pinning it keeps nothing more (restore it from an export bundle instead)")
                event = RunRetention(action="pin" if pinned else "unpin", by=actor)
                self._append_retention(c, head, event, actor, now, flag=("pinned", pinned))
                return True

        try:
            return self._autocommit("set_pinned", tx)
        finally:
            self._forget_head(run_id, "audit")

    def _append_retention(self, c: psycopg.Connection, head: Any, event: RunRetention, actor: str, now: datetime,
                          *, flag: tuple[Literal["pinned", "pruned_at"], object]) -> None:
        """Append the event on the audit head read under the row lock, with the flag it records."""
        parsed, data, text = self._audit_entry(event, actor)
        seq = int(head.audit_count) + 1
        digest = chain_hash(head.audit_head, audit_payload(head.run_id, seq, parsed.kind, data, actor, now))
        column, value = flag
        written = c.execute(_AUDIT_SQL.format(flag=column),
                            {"run_id": head.run_id, "seq": seq, "kind": parsed.kind, "event": text, "actor": actor,
                             "now": now, "prev": head.audit_head, "hash": digest, "flag": value}).fetchall()
        if not written:  # cannot happen under the row lock; refuse rather than commit half
            raise RuntimeError(f"the audit head of run {head.run_id} moved under its row lock; nothing was changed")


def _why_kept(head: Any, cutoff: datetime) -> str:
    if head.pruned_at is not None:
        return f"already pruned on {head.pruned_at.date()}"
    if head.pinned:
        return "pinned (`longrun unpin` it first)"
    if head.status not in FINISHED:
        return f"not finished ({head.status})"
    return (f"not finished before {cutoff.isoformat()}, or its family is not done (a parent or subagent still "
            "running, a pinned parent, or a fork still running or pinned)")


__all__ = ["FINISHED", "PruneCandidate", "PruneOutcome", "RetentionMixin"]
