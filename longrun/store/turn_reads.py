"""The reads an activity starts from, each one statement: what a turn needs (the head state, the
calibration, the newest transcript entry, the newest projection, the tokens of the run and its
subagents in the spend ledger, the results it commits and the transcript's tail after the
projection, which its request renders) and what a tool call needs (the head state and the
transcript entry holding the call).

Each replaces two or three single-row reads of the same run (`load_state`, `get_calibration`,
`last_transcript_entry`, `latest_projection`, `transcript(after_seq=seq - 1, through_seq=seq)`) by one, read in one
snapshot, and tells the store the heads it saw, as those reads do (state and transcript chains).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import psycopg

from longrun.errors import RunNotFoundError
from longrun.models import Projection, TaskState
from longrun.store.artifacts import ArtifactsMixin
from longrun.store.core import fetch_one
from longrun.store.records import TranscriptRecord
from longrun.store.spend import TOKENS_SUM
from longrun.store.state import StateMixin
from longrun.store.transcript import LINEAGE_SEGMENTS, VISIBLE_ENTRIES, TranscriptMixin

_HEAD = "t.state, t.state_version, r.state_head, r.transcript_count AS t_count, r.transcript_head AS t_head"

_RATIO = """CASE WHEN jsonb_typeof(r.calibration->'ratio') = 'number' AND (r.calibration->>'ratio')::float8 > 0
                   THEN (r.calibration->>'ratio')::float8 ELSE 1.0 END"""
"""The calibration's ratio as `Calibration` reads it (1.0 when unset or not positive)."""

_TAIL_CTES = """, tw AS (
    SELECT e.seq, e.token_estimate FROM seg JOIN transcript_entries e
      ON e.run_id = seg.run_id AND e.seq > seg.lo AND e.seq <= seg.hi
), tt AS (
    SELECT e.* FROM seg JOIN transcript_entries e ON e.run_id = seg.run_id AND e.seq > seg.lo AND e.seq <= seg.hi
)
"""
"""The entries again, once for the tail's window over token estimates (`tw`: no content read) and
once for the tail itself (`tt`): each CTE is referenced once, so PostgreSQL inlines it into an
index range instead of materializing the run's whole transcript."""

_TAIL_LATERAL = f"""
LEFT JOIN LATERAL (
    SELECT floor(%(tail_base)s::float8 / {_RATIO})::bigint AS tokens
) k ON true
LEFT JOIN LATERAL (
    SELECT array_agg(x.seq ORDER BY x.seq) AS seqs, array_agg(x.role ORDER BY x.seq) AS roles,
           array_agg(x.content::text ORDER BY x.seq) AS contents,
           array_agg(x.token_estimate ORDER BY x.seq) AS estimates, array_agg(x.usage::text ORDER BY x.seq) AS usages,
           array_agg(x.turn ORDER BY x.seq) AS turns, array_agg(x.created_at ORDER BY x.seq) AS created,
           array_agg(x.prev_hash ORDER BY x.seq) AS prevs, array_agg(x.hash ORDER BY x.seq) AS hashes
    FROM tt x
    WHERE %(tail_base)s::float8 IS NOT NULL AND x.seq > greatest(coalesce(p.covers_through_seq, 0), coalesce((
        SELECT max(w.seq) - 1 FROM (
          SELECT y.seq, sum(y.token_estimate) OVER (ORDER BY y.seq DESC) - y.token_estimate AS newer
          FROM tw y WHERE y.seq > coalesce(p.covers_through_seq, 0)
        ) w WHERE w.newer >= k.tokens), 0))
) tl ON true
"""
"""The transcript's tail after the newest projection, as `Store.transcript_tail` reads it, for
`TAIL_READ_FACTOR` times the request limit (`tail_base`, in calibrated tokens) over the stored
calibration's ratio; NULL `tail_base` reads none. Contents come as text, parsed only if the
request is rendered (a turn whose commit sends it to compaction first never does)."""

_TURN_SQL = "WITH RECURSIVE " + LINEAGE_SEGMENTS + """, te AS (
    SELECT e.* FROM seg JOIN transcript_entries e ON e.run_id = seg.run_id AND e.seq > seg.lo AND e.seq <= seg.hi
)""" + _TAIL_CTES + f"""
SELECT {_HEAD}, r.calibration, e.seq, e.role, e.turn, s.ledger_tokens,
       p.version, p.base_state_version, p.covers_through_seq, p.content, p.report,
       a.shas, a.datas, a.pruned, a.sizes, k.tokens AS tail_tokens,
       tl.seqs AS tail_seqs, tl.roles AS tail_roles, tl.contents AS tail_contents, tl.estimates AS tail_estimates,
       tl.usages AS tail_usages, tl.turns AS tail_turns, tl.created AS tail_created, tl.prevs AS tail_prevs,
       tl.hashes AS tail_hashes
FROM task_states t JOIN runs r ON r.run_id = t.run_id
LEFT JOIN LATERAL (
    SELECT x.seq, x.role, x.turn FROM te x ORDER BY x.seq DESC LIMIT 1
) e ON true
LEFT JOIN LATERAL (
    SELECT * FROM projections x WHERE x.run_id = r.run_id ORDER BY x.version DESC LIMIT 1
) p ON true
LEFT JOIN LATERAL (
    WITH RECURSIVE down(run_id) AS (
        SELECT %(run_id)s::text UNION ALL SELECT c.run_id FROM runs c JOIN down d ON c.parent_run_id = d.run_id
    ) SELECT {TOKENS_SUM} AS ledger_tokens FROM model_requests m WHERE m.run_id IN (SELECT run_id FROM down)
) s ON true
LEFT JOIN LATERAL (
    SELECT array_agg(x.sha256) AS shas, array_agg(x.data) AS datas, array_agg(x.pruned_at) AS pruned,
           array_agg(x.size) AS sizes
    FROM artifacts x WHERE x.sha256 = ANY(%(shas)s::text[])
) a ON true{_TAIL_LATERAL}WHERE t.run_id = %(run_id)s
"""

_CALL_SQL = VISIBLE_ENTRIES + f"""
SELECT {_HEAD}, e.seq, e.role, e.content, e.token_estimate, e.usage, e.turn, e.created_at, e.prev_hash, e.hash
FROM task_states t JOIN runs r ON r.run_id = t.run_id
LEFT JOIN te e ON e.seq = %(seq)s
WHERE t.run_id = %(run_id)s
"""


@dataclass
class TranscriptTail:
    """The transcript's tail a turn's first read brought: the entries after `after` (the newest
    projection's cover) as far back as `tokens` reach, and one more (`Store.transcript_tail`'s
    rule), through entry `through` (the newest, 0 for none). Parsed on first use; the turn's own
    appends are added as they land (`extend`), and `entries` cuts the window again, for the
    entries added, exactly as the statement would have (a longer tail only moves its start later)."""

    after: int
    tokens: int
    through: int
    rows: list[Any] = field(default_factory=list)
    added: list[TranscriptRecord] = field(default_factory=list)
    _parsed: list[TranscriptRecord] | None = None

    def extend(self, record: TranscriptRecord) -> bool:
        """Add the entry this turn appended; False (and nothing added) unless it is the next one."""
        if record.seq != self.through + 1:
            return False
        self.added.append(record)
        self.through = record.seq
        return True

    def entries(self, run_id: str) -> list[TranscriptRecord]:
        if self._parsed is None:
            self._parsed = [TranscriptMixin._transcript_record(run_id, SimpleNamespace(
                seq=seq, role=role, content=json.loads(content), token_estimate=estimate,
                usage=None if usage is None else json.loads(usage), turn=turn, created_at=created, prev_hash=prev,
                hash=digest)) for seq, role, content, estimate, usage, turn, created, prev, digest in self.rows]
        return _window([*self._parsed, *self.added], self.tokens)


def _window(entries: list[TranscriptRecord], tokens: int) -> list[TranscriptRecord]:
    """The newest of `entries` (oldest first) whose token estimates reach `tokens`, and the one
    before the oldest of them; all of them when they do not reach it (as `_TAIL_SQL` cuts)."""
    newer = 0
    for i in range(len(entries) - 1, -1, -1):
        if newer >= tokens:
            return entries[i:]
        newer += entries[i].token_estimate
    return entries


def _tail(row: Any) -> TranscriptTail | None:
    """The tail in the turn's row (None when none was asked for)."""
    if row.tail_tokens is None:
        return None
    after = 0 if row.covers_through_seq is None else int(row.covers_through_seq)
    columns = (row.tail_seqs, row.tail_roles, row.tail_contents, row.tail_estimates, row.tail_usages,
               row.tail_turns, row.tail_created, row.tail_prevs, row.tail_hashes)
    rows = list(zip(*(c or () for c in columns), strict=True))
    through = max(after, int(row.seq or 0))
    return TranscriptTail(after, int(row.tail_tokens), through, rows)


@dataclass(frozen=True)
class TurnHead:
    """What `load_turn_head` read: the head state, the run's calibration data (a JSON object,
    empty until first set), the newest transcript entry as (seq, role, turn), None when the
    transcript is empty, the newest projection (None before the first compaction), and the
    tokens of the answered requests of the run and of its subagents (children, theirs, ...) in
    the spend ledger (what its token cap counts), and the artifacts asked for by sha256 as
    (data, pruned_at, size) rows (`unless_pruned` tells a pruned one; an unknown sha256 is missing),
    and with `tail_base`, the transcript's tail after the projection (`TranscriptTail`)."""

    state: TaskState
    calibration: dict[str, Any]
    last_entry: tuple[int, str, int | None] | None
    projection: Projection | None
    ledger_tokens: int = 0
    artifacts: dict[str, tuple[Any, Any, int]] = field(default_factory=dict)
    tail: TranscriptTail | None = None


class TurnReadsMixin(StateMixin):
    """One-statement reads of what an agent's turn and a tool call start from."""

    def _head_row(self, c: psycopg.Connection, sql: str, params: dict[str, Any]) -> tuple[Any, TaskState]:
        run_id = params["run_id"]
        row = fetch_one(c, sql, params)
        if row is None:
            raise RunNotFoundError(run_id)
        state = self._parse_state(run_id, row.state, "head state")
        self._remember_head(run_id, row.state_version, row.state_head)
        self._remember_head(run_id, row.t_count, row.t_head, "transcript", newer_only=True)
        return row, state

    def load_turn_head(self, run_id: str, artifacts: Sequence[str] = (), *, tail_base: float | None = None) -> TurnHead:
        """The head state, the calibration, the newest transcript entry, the newest projection, the
        tokens of the run and its subagents in the spend ledger, the `artifacts` named (the
        previous turn's tool results, which the turn commits) and, with `tail_base`, the
        transcript's tail after that projection, as `transcript_tail` reads it for `tail_base`
        over the stored calibration's ratio, in one statement (what an agent's turn reads before
        it commits, reconciles, renders its request and calls the model).

        Raises:
            RunNotFoundError: no run has this id.
        """

        def read(c: psycopg.Connection) -> TurnHead:
            row, state = self._head_row(c, _TURN_SQL, {"run_id": run_id, "shas": list(artifacts), "tail_base": tail_base})
            last = None if row.seq is None else (row.seq, row.role, row.turn)
            projection = None if row.version is None else ArtifactsMixin._projection(run_id, row)
            found = {sha: (data, pruned, size) for sha, data, pruned, size
                     in zip(row.shas or (), row.datas or (), row.pruned or (), row.sizes or (), strict=True)}
            return TurnHead(state, dict(row.calibration or {}), last, projection, int(row.ledger_tokens), found,
                            _tail(row))

        return self._autocommit("load_turn_head", read)

    def load_call_head(self, run_id: str, seq: int) -> tuple[TaskState, TranscriptRecord | None]:
        """The head state and transcript entry `seq` (the one holding a tool call; None when the
        transcript has no such entry), in one statement.

        Raises:
            RunNotFoundError: no run has this id.
        """

        def read(c: psycopg.Connection) -> tuple[TaskState, TranscriptRecord | None]:
            row, state = self._head_row(c, _CALL_SQL, {"run_id": run_id, "seq": seq})
            return state, None if row.seq is None else TranscriptMixin._transcript_record(run_id, row)

        return self._autocommit("load_call_head", read)
