"""Counts over every run, for the console's `/metrics` (`longrun.telemetry.overview`): read at
scrape time from PostgreSQL, so they are right however many workers and consoles there are.

One statement, one snapshot. It reads the `runs` table (grouped by status), and for the runs
not finished only: their audit events of the approval kinds (a pending approval is the last
`approval_requested` that no grant, rejection, expiry, newer request or `run_finished` followed,
as `longrun.client.status.pending_from_audit` reads it) and their head state's open effects. A
running run with a pending approval counts as `waiting_approval`, as the console lists it.

The `runs` row says `running` until the run ends: pausing lives in the workflow. So a run not
finished counts as `paused` as the workflow's status query says it, from what PostgreSQL holds:
its last `pause`/`resume` control was a pause, or its head state waits for a human
(`next_action = ask_human`, which only `say` ends; `resume` does not). A pause outranks a pending
approval, as in the workflow (a pause that arrives during the wait stays).
"""

from __future__ import annotations

from dataclasses import dataclass

import psycopg

from longrun.store.core import StoreCore, fetch_one

_OVERVIEW_SQL = """
WITH live AS (
    SELECT run_id FROM runs WHERE status NOT IN ('completed', 'failed', 'cancelled')
), pending AS (
    SELECT r.run_id, r.created_at
    FROM live JOIN audit_events r ON r.run_id = live.run_id
    WHERE r.kind = 'approval_requested' AND NOT EXISTS (
        SELECT 1 FROM audit_events a
        WHERE a.run_id = r.run_id AND a.seq > r.seq AND (
            a.kind IN ('approval_requested', 'run_finished')
            OR (a.kind IN ('approval_granted', 'approval_rejected', 'approval_expired')
                AND a.event->>'approval_id' = r.event->>'approval_id')))
), paused AS (
    SELECT live.run_id FROM live LEFT JOIN task_states t ON t.run_id = live.run_id
    WHERE t.state->>'next_action' = 'ask_human' OR (
        SELECT a.event->>'action' FROM audit_events a
        WHERE a.run_id = live.run_id AND a.kind = 'run_control' AND a.event->>'action' IN ('pause', 'resume')
        ORDER BY a.seq DESC LIMIT 1) = 'pause'
), by_status AS (
    SELECT CASE WHEN r.status = 'running' AND z.run_id IS NOT NULL THEN 'paused'
                WHEN r.status = 'running' AND p.run_id IS NOT NULL THEN 'waiting_approval' ELSE r.status END
           AS status, count(*) AS n
    FROM runs r LEFT JOIN pending p ON p.run_id = r.run_id LEFT JOIN paused z ON z.run_id = r.run_id
    GROUP BY 1
)
SELECT
    (SELECT coalesce(json_object_agg(status, n), '{}'::json) FROM by_status) AS runs,
    (SELECT count(*) FROM pending) AS pending,
    (SELECT extract(epoch FROM now() - min(created_at))::float8 FROM pending) AS oldest_seconds,
    (SELECT count(*) FROM live JOIN task_states t ON t.run_id = live.run_id,
            jsonb_array_elements(coalesce(t.state->'effects', '[]'::jsonb)) e
     WHERE e->>'status' = 'unknown') AS unknown_effects
"""


@dataclass(frozen=True)
class Overview:
    """What `/metrics` shows of every run: counts, no names or ids."""

    runs: dict[str, int]
    """Runs by status (`paused` for a running run paused or waiting for a human, `waiting_approval`
    for one with a pending approval)."""
    approvals_pending: int
    oldest_pending_seconds: float
    """How long the oldest pending approval has waited (0 when none waits), by the database's clock."""
    effects_unknown: int
    """Open effects whose outcome is not yet known, over the runs not finished."""


class OverviewMixin(StoreCore):
    def overview(self) -> Overview:
        """Counts over every run, read in one statement (see the module docstring)."""

        def read(c: psycopg.Connection) -> Overview:
            row = fetch_one(c, _OVERVIEW_SQL, {})
            assert row is not None
            return Overview(runs={str(k): int(v) for k, v in (row.runs or {}).items()},
                            approvals_pending=int(row.pending), oldest_pending_seconds=float(row.oldest_seconds or 0.0),
                            effects_unknown=int(row.unknown_effects))

        return self._autocommit("overview", read)


__all__ = ["Overview", "OverviewMixin"]
