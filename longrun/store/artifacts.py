"""Content-addressed artifacts (tool output, file contents: bytes stored once under their sha256)
and the projections compaction writes (the compacted view of a run's transcript).

Rules:

- an artifact is named by the sha256 of its bytes; storing the same bytes again is a no-op, and
  nothing ever changes stored bytes, except `longrun prune` (migration 0014), which empties the
  bytes no unpruned run links to; storing them again puts them back (`_RESTORE_SQL`, a second
  statement only then);
- a run that stores an artifact is linked to it (`run_artifacts`, migration 0005), and a run reads
  artifacts only within its family: itself, its parent and its children (`get_family_artifact`,
  `resolve_family_artifact_prefix`, what `read_artifact` uses). The bytes are global, the right
  to read them is not: another run's hash, or a prefix of it seen in an audit log, is refused
  with the same message as a hash nobody stored;
- a projection is never written over a newer one: it is refused when the head state moved past the
  version the compaction started from, or when an equal or newer projection version is stored
  (`StaleProjectionError`); projections are append-only, the newest is current;
- `put_artifact`, `get_artifact`, `has_artifact` and `latest_projection` are one statement each
  (autocommit); `save_projection` is a transaction (it locks the head state while it checks).
"""

from __future__ import annotations

from typing import Any

import psycopg
from pydantic import ValidationError
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from longrun.errors import ArtifactPruned, RunNotFoundError, StaleStateError, StoreError
from longrun.models import Message, Projection, sha256_hex, utcnow
from longrun.models.context import CompactionReport
from longrun.store.core import (
    MAX_ARTIFACT_BYTES,
    MAX_MESSAGE_BYTES,
    InvalidInputError,
    StaleProjectionError,
    check_int,
    check_size,
    check_text,
    fetch_one,
    fields,
    validate,
)
from longrun.store.facts import FactsMixin
from longrun.store.tables import ArtifactRow, ProjectionRow, TaskStateRow
from longrun.store.tombstone import placeholder, tombstone_of

_PRUNED_BEFORE = """
SELECT EXISTS (SELECT FROM artifacts a WHERE a.sha256 = %(sha256)s AND a.size > 0 AND octet_length(a.data) = 0)
"""
"""Whether the bytes were stored before and pruned since (`longrun prune` empties them, keeping the
size; migration 0014): read in the snapshot the put started from, so a fresh insert says no."""

_PUT_SQL = f"""
WITH put AS (
    INSERT INTO artifacts (sha256, data, media_type, size, created_at)
    VALUES (%(sha256)s, %(data)b, %(media_type)s, %(size)s, %(now)s)
    ON CONFLICT (sha256) DO NOTHING
)
{_PRUNED_BEFORE}"""
"""One statement: the bytes go in binary (`%b`, not as hex text); a second put is a no-op. It
answers whether the stored bytes had been pruned (then `_RESTORE_SQL` puts them back)."""

_LINK_SQL = """
INSERT INTO run_artifacts (run_id, sha256, created_at) VALUES (%(run_id)s, %(sha256)s, %(now)s)
ON CONFLICT (run_id, sha256) DO NOTHING
"""

_PUT_LINKED_SQL = f"""
WITH put AS (
    INSERT INTO artifacts (sha256, data, media_type, size, created_at)
    VALUES (%(sha256)s, %(data)b, %(media_type)s, %(size)s, %(now)s)
    ON CONFLICT (sha256) DO NOTHING
), link AS (
    INSERT INTO run_artifacts (run_id, sha256, created_at) VALUES (%(run_id)s, %(sha256)s, %(now)s)
    ON CONFLICT (run_id, sha256) DO NOTHING
)
{_PRUNED_BEFORE}"""
"""`_PUT_SQL` and `_LINK_SQL` in one statement, one round trip (a tool result is stored on every
tool call): the foreign keys are checked at the statement's end, where the new bytes are seen."""

RESULTS_CTES = """put AS (
    INSERT INTO artifacts (sha256, data, media_type, size, created_at)
    SELECT x.sha256, x.data, 'text/plain', octet_length(x.data), %(now)s
    FROM upd, unnest(%(r_shas)s::text[], %(r_datas)b::bytea[]) AS x(sha256, data)
    ON CONFLICT (sha256) DO NOTHING
), link AS (
    INSERT INTO run_artifacts (run_id, sha256, created_at)
    SELECT upd.run_id, x.sha256, %(now)s FROM upd, unnest(%(r_shas)s::text[]) AS x(sha256)
    ON CONFLICT (run_id, sha256) DO NOTHING
)"""
RESULTS_PRUNED = """(SELECT array_agg(a.sha256) FROM artifacts a
    WHERE a.sha256 = ANY(%(r_shas)s::text[]) AND a.size > 0 AND octet_length(a.data) = 0) AS pruned"""
"""Tool results (text) stored and linked to the run by another append statement whose UPDATE of
the run's row is `upd` (the audit batch that names them: they land with it or not at all), and
which of them had been pruned before (`_PRUNED_BEFORE`, then put back by `RESTORE_SQL`)."""

RESTORE_SQL = _RESTORE_SQL = "SELECT longrun_restore_artifact(%(sha256)s, %(data)b)"
"""Bytes a pruned run emptied, stored again by a live run: put back (only if they hash to the
name; a SECURITY DEFINER function, as the app role may not UPDATE `artifacts`, migration 0014)."""

_FAMILY = """
SELECT r.run_id FROM runs r
WHERE r.run_id = %(run_id)s OR r.parent_run_id = %(run_id)s
   OR r.run_id = (SELECT p.parent_run_id FROM runs p WHERE p.run_id = %(run_id)s)
"""
"""The run, its children and its parent."""

_FAMILY_GET_SQL = f"""
SELECT a.data, a.pruned_at, a.size FROM artifacts a
WHERE a.sha256 = %(sha256)s
  AND EXISTS (SELECT FROM run_artifacts l WHERE l.sha256 = a.sha256 AND l.run_id IN ({_FAMILY}))
"""

_FAMILY_PREFIX_SQL = f"""
SELECT DISTINCT l.sha256 FROM run_artifacts l
WHERE l.sha256 >= %(prefix)s AND l.sha256 < %(upper)s AND l.sha256 LIKE %(like)s
  AND l.run_id IN ({_FAMILY})
ORDER BY l.sha256 LIMIT 2
"""

_LATEST_PROJECTION_SQL = """
SELECT p.version, p.base_state_version, p.covers_through_seq, p.content, p.report
FROM runs r LEFT JOIN LATERAL (
    SELECT * FROM projections x WHERE x.run_id = r.run_id ORDER BY x.version DESC LIMIT 1
) p ON true
WHERE r.run_id = %(run_id)s
"""
"""The newest projection, joined from the `runs` row: no row means no such run, NULLs no projection."""


def unless_pruned(sha256: str, row: Any) -> bytes:
    """An artifact's bytes, or `ArtifactPruned` naming its tombstone when they were pruned."""
    data, pruned_at, size = row
    if pruned_at is not None:
        raise ArtifactPruned(sha256, placeholder(pruned_at, sha256, int(size)))
    return bytes(data)


class ArtifactsMixin(FactsMixin):
    """Artifacts by sha256, and a run's projections by version."""

    def put_artifact(self, data: bytes, media_type: str = "text/plain", *, run_id: str | None = None) -> str:
        """Store bytes once under their sha256 (a second put of the same bytes is a no-op), and
        link them to `run_id`, the run that stored them (what a run's tools may read back).

        Returns:
            The sha256 hex digest that names the artifact.

        Raises:
            RunNotFoundError: `run_id` names no run (nothing is stored).
        """
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise InvalidInputError(f"data: expected bytes, got {type(data).__name__} (encode text first)")
        blob = bytes(data)
        if len(blob) > MAX_ARTIFACT_BYTES:
            raise InvalidInputError(f"data: {len(blob):,} bytes is over the artifact limit of {MAX_ARTIFACT_BYTES:,}")
        check_text("media_type", media_type, 200, nonempty=True)
        digest = sha256_hex(blob)

        def write(c: psycopg.Connection) -> None:
            params = {"sha256": digest, "data": blob, "media_type": media_type, "size": len(blob), "now": utcnow()}
            if run_id is None:
                pruned = c.execute(_PUT_SQL, params).fetchone()
            else:
                pruned = self._link(c, run_id, digest, params["now"], sql=_PUT_LINKED_SQL, params=params)
            if pruned is not None and pruned[0] is True:
                c.execute(_RESTORE_SQL, params)

        self._autocommit("put_artifact", write)
        return digest

    def link_artifact(self, run_id: str, sha256: str) -> None:
        """Let `run_id` read an artifact stored already (idempotent).

        Raises:
            RunNotFoundError: no such run. StoreError: no such artifact."""
        self._autocommit("link_artifact", lambda c: self._link(c, run_id, sha256, utcnow()))

    @staticmethod
    def _link(c: psycopg.Connection, run_id: str, sha256: str, now: Any, *, sql: str = _LINK_SQL,
              params: dict[str, Any] | None = None) -> Any:
        """Run `sql` (a link, or a put and link) and return its first row, if it has one."""
        try:
            cur = c.execute(sql, {**(params or {}), "run_id": run_id, "sha256": sha256, "now": now})
            return cur.fetchone() if cur.description else None
        except psycopg.errors.ForeignKeyViolation as exc:
            if "run_id" in str(exc):
                raise RunNotFoundError(run_id) from exc
            raise StoreError(f"no artifact with sha256 {sha256} to link to run {run_id}") from exc

    def get_family_artifact(self, run_id: str, sha256: str) -> bytes:
        """The bytes of an artifact the run, its parent or one of its children stored.

        Raises:
            InvalidInputError: no run of the family stored it (whether another run did is not said)."""

        def read(c: psycopg.Connection) -> bytes:
            row = c.execute(_FAMILY_GET_SQL, {"sha256": sha256, "run_id": run_id}, binary=True).fetchone()
            if row is None:
                raise InvalidInputError(
                    f"no artifact with sha256 {sha256} belongs to this run, its parent or its children"
                )
            return unless_pruned(sha256, row)

        return self._autocommit("get_family_artifact", read)

    def resolve_family_artifact_prefix(self, run_id: str, prefix: str) -> str:
        """The full sha256 of the one artifact of the run's family (itself, its parent, its
        children) whose hash starts with `prefix` (12 to 64 lowercase hex digits).

        Raises:
            InvalidInputError: a malformed prefix, or no artifact of the family or more than one
                matches it (another run's artifacts are never considered)."""
        if not isinstance(prefix, str) or not 12 <= len(prefix) <= 64 or prefix.strip("0123456789abcdef"):
            raise InvalidInputError(f"sha256 prefix: expected 12 to 64 lowercase hex digits, got {prefix!r}")

        def read(c: psycopg.Connection) -> list[str]:
            rows = c.execute(_FAMILY_PREFIX_SQL, {"prefix": prefix, "upper": prefix + "g", "like": prefix + "%",
                                                  "run_id": run_id}).fetchall()
            return [str(r[0]) for r in rows]

        found = self._autocommit("resolve_family_artifact_prefix", read)
        if not found:
            raise InvalidInputError(f"no artifact of this run, its parent or its children has a sha256 starting with {prefix}")
        if len(found) > 1:
            raise InvalidInputError(f"more than one artifact's sha256 starts with {prefix}; give more digits or the full hash")
        return found[0]

    def get_artifact(self, sha256: str) -> bytes:
        """Raises:
        StoreError: no artifact has this hash."""

        def read(c: psycopg.Connection) -> bytes:
            # binary results: the bytes as they are, not hex text to decode
            row = c.execute("SELECT data, pruned_at, size FROM artifacts WHERE sha256 = %(sha256)s",
                            {"sha256": sha256}, binary=True).fetchone()
            if row is None:
                raise StoreError(f"no artifact with sha256 {sha256}: it was never stored (check the reference)")
            return unless_pruned(sha256, row)

        return self._autocommit("get_artifact", read)

    def has_artifact(self, sha256: str) -> bool:
        def read(c: psycopg.Connection) -> bool:
            row = c.execute("SELECT EXISTS (SELECT FROM artifacts WHERE sha256 = %(sha256)s)",
                            {"sha256": sha256}).fetchone()
            return row is not None and row[0] is True

        return self._autocommit("has_artifact", read)

    def resolve_artifact_prefix(self, prefix: str) -> str:
        """The full sha256 of the one artifact whose hash starts with `prefix` (12 to 64 lowercase
        hex digits), for `read_artifact` references abbreviated by a model or an index.

        Raises:
            InvalidInputError: a malformed prefix, or no artifact or more than one matches it."""
        if not isinstance(prefix, str) or not 12 <= len(prefix) <= 64 or prefix.strip("0123456789abcdef"):
            raise InvalidInputError(f"sha256 prefix: expected 12 to 64 lowercase hex digits, got {prefix!r}")

        def tx(s: Session) -> list[str]:
            # a range on the primary key (index-friendly in any collation) plus the exact LIKE
            query = (select(ArtifactRow.sha256)
                     .where(ArtifactRow.sha256 >= prefix, ArtifactRow.sha256 < prefix + "g",
                            ArtifactRow.sha256.like(prefix + "%"))
                     .limit(2))
            return list(s.scalars(query))

        found = self._tx("resolve_artifact_prefix", tx)
        if not found:
            raise InvalidInputError(f"no artifact's sha256 starts with {prefix}")
        if len(found) > 1:
            raise InvalidInputError(f"more than one artifact's sha256 starts with {prefix}; give more digits or the full hash")
        return found[0]

    # ------------------------------------------------------------------ projections

    def save_projection(self, run_id: str, projection: Projection, *, expected_state_version: int) -> int:
        """Store a compaction's projection, unless it is stale.

        Stale means: the head state moved past `expected_state_version` while the compaction ran,
        or a projection with the same or a newer version is already stored. Either way the
        projection is discarded, never written over newer data.

        Returns:
            The projection's version.

        Raises:
            StaleStateError: the head is not `expected_state_version`.
            StaleProjectionError: (a StaleStateError) a newer or equal projection version exists.
        """
        proj: Projection = validate(Projection, projection, "projection")
        check_int("expected_state_version", expected_state_version, minimum=1)
        content: dict[str, Any] = {
            "summary": self.redactor.redact(proj.summary) if proj.summary else proj.summary,
            "messages": [self._redact_message(m.model_dump(mode="json")) for m in proj.messages]}
        if proj.summary_users is not None:
            content["summary_users"] = [self.redactor.redact(t) for t in proj.summary_users]
        check_size("projection", content, MAX_MESSAGE_BYTES * 4, "the projection should be smaller than the window")
        report = proj.report.model_dump(mode="json")

        def tx(s: Session) -> int:
            head = s.scalar(
                select(TaskStateRow.state_version).where(TaskStateRow.run_id == run_id).with_for_update()
            )
            if head is None:
                raise RunNotFoundError(run_id)
            if head != expected_state_version:
                raise StaleStateError(run_id, expected_state_version, head)
            newest = s.scalar(select(func.max(ProjectionRow.version)).where(ProjectionRow.run_id == run_id))
            if newest is not None and newest >= proj.version:
                raise StaleProjectionError(run_id, proj.version, newest)
            s.add(ProjectionRow(run_id=run_id, version=proj.version, base_state_version=proj.base_state_version,
                                covers_through_seq=proj.covers_through_seq, content=content, report=report,
                                created_at=utcnow()))
            s.flush()
            self.insert_facts(s, run_id, proj.new_facts, proj.version)
            s.flush()
            return proj.version

        return self._tx("save_projection", tx)

    @staticmethod
    def _projection(run_id: str, row: Any) -> Projection:
        """A projection of a `projections` row (an ORM row or a named tuple with its columns); a
        pruned one has the tombstone's placeholder as its summary and no messages."""
        pruned = tombstone_of(row.content)
        if pruned is not None:
            return Projection(version=row.version, base_state_version=row.base_state_version,
                              covers_through_seq=row.covers_through_seq, summary=pruned.placeholder(), messages=[],
                              report=CompactionReport.model_validate(row.report))
        try:
            return Projection(
                version=row.version, base_state_version=row.base_state_version,
                covers_through_seq=row.covers_through_seq, summary=row.content.get("summary"),
                messages=[Message.model_validate(m) for m in row.content.get("messages", [])],
                report=CompactionReport.model_validate(row.report),
                summary_users=row.content.get("summary_users"),
            )
        except ValidationError as exc:
            raise StoreError(f"projection {row.version} of run {run_id} does not parse: {fields(exc)}") from exc

    def latest_projection(self, run_id: str) -> Projection | None:
        """The newest projection of the run, or None before the first compaction."""

        def read(c: psycopg.Connection) -> Projection | None:
            row = fetch_one(c, _LATEST_PROJECTION_SQL, {"run_id": run_id})
            if row is None:
                raise RunNotFoundError(run_id)
            return None if row.version is None else self._projection(run_id, row)

        return self._autocommit("latest_projection", read)

    def projections(self, run_id: str) -> list[Projection]:
        """Every projection of the run, oldest first."""

        def tx(s: Session) -> list[Projection]:
            self._require_run(s, run_id)
            rows = s.scalars(
                select(ProjectionRow).where(ProjectionRow.run_id == run_id).order_by(ProjectionRow.version)
            )
            return [self._projection(run_id, r) for r in rows]

        return self._tx("projections", tx)
