"""The reads an activity starts from, each one statement: what a turn needs (the head state, the
calibration, the newest transcript entry, the newest projection, the tokens of the run and its
subagents in the spend ledger) and what a tool call needs (the head state and the transcript entry holding the call).

Each replaces two or three single-row reads of the same run (`load_state`, `get_calibration`,
`last_transcript_entry`, `latest_projection`, `transcript(after_seq=seq - 1, through_seq=seq)`) by one, read in one
snapshot, and tells the store the heads it saw, as those reads do (state and transcript chains).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg

from longrun.errors import RunNotFoundError
from longrun.models import Projection, TaskState
from longrun.store.artifacts import ArtifactsMixin
from longrun.store.core import fetch_one
from longrun.store.records import TranscriptRecord
from longrun.store.spend import TOKENS_SUM
from longrun.store.state import StateMixin
from longrun.store.transcript import VISIBLE_ENTRIES, TranscriptMixin

_HEAD = "t.state, t.state_version, r.state_head, r.transcript_count AS t_count, r.transcript_head AS t_head"

_TURN_SQL = VISIBLE_ENTRIES + f"""
SELECT {_HEAD}, r.calibration, e.seq, e.role, e.turn, s.ledger_tokens,
       p.version, p.base_state_version, p.covers_through_seq, p.content, p.report,
       a.shas, a.datas, a.pruned, a.sizes
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
) a ON true
WHERE t.run_id = %(run_id)s
"""

_CALL_SQL = VISIBLE_ENTRIES + f"""
SELECT {_HEAD}, e.seq, e.role, e.content, e.token_estimate, e.usage, e.turn, e.created_at, e.prev_hash, e.hash
FROM task_states t JOIN runs r ON r.run_id = t.run_id
LEFT JOIN te e ON e.seq = %(seq)s
WHERE t.run_id = %(run_id)s
"""


@dataclass(frozen=True)
class TurnHead:
    """What `load_turn_head` read: the head state, the run's calibration data (a JSON object,
    empty until first set), the newest transcript entry as (seq, role, turn), None when the
    transcript is empty, the newest projection (None before the first compaction), and the
    tokens of the answered requests of the run and of its subagents (children, theirs, ...) in
    the spend ledger (what its token cap counts), and the artifacts asked for by sha256 as
    (data, pruned_at, size) rows (`unless_pruned` tells a pruned one; an unknown sha256 is missing)."""

    state: TaskState
    calibration: dict[str, Any]
    last_entry: tuple[int, str, int | None] | None
    projection: Projection | None
    ledger_tokens: int = 0
    artifacts: dict[str, tuple[Any, Any, int]] = field(default_factory=dict)


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

    def load_turn_head(self, run_id: str, artifacts: Sequence[str] = ()) -> TurnHead:
        """The head state, the calibration, the newest transcript entry, the newest projection, the
        tokens of the run and its subagents in the spend ledger, and the `artifacts` named (the
        previous turn's tool results, which the turn commits), in one statement (what an agent's
        turn reads before it commits, reconciles and calls the model).

        Raises:
            RunNotFoundError: no run has this id.
        """

        def read(c: psycopg.Connection) -> TurnHead:
            row, state = self._head_row(c, _TURN_SQL, {"run_id": run_id, "shas": list(artifacts)})
            last = None if row.seq is None else (row.seq, row.role, row.turn)
            projection = None if row.version is None else ArtifactsMixin._projection(run_id, row)
            found = {sha: (data, pruned, size) for sha, data, pruned, size
                     in zip(row.shas or (), row.datas or (), row.pruned or (), row.sizes or (), strict=True)}
            return TurnHead(state, dict(row.calibration or {}), last, projection, int(row.ledger_tokens), found)

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
