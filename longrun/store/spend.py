"""The spend ledger in PostgreSQL (tables `model_requests` and `budget_raises`, migration 0012).

Rules:

- a model request's row is written `sent` *before* the provider is called, keyed by run, turn,
  overflow retry and Temporal attempt (a retried attempt writes its own row; the same attempt
  writing twice changes nothing), at the cost of its input estimate: a request whose answer a
  crash lost is never lost from the ledger, and never counted as more than one request;
- the answer settles the newest `sent` row of its turn (`settle_turn`): on the first try right
  after the assistant message is appended, or, when a crash came between the two, on the retry
  that finds the message already in the transcript. A turn is settled once: a second settle finds
  its transcript seq already on a row and changes nothing;
- a request the provider refused (an error, an overflow) is `failed`, at no cost;
- sums are per run and per run family (`root_run_id`: a subagent spends its root's budget); a
  family with an answered request on an unpriced model has an *unknown* total, never a smaller one;
- tokens are counted from the answered rows' usage (a request whose answer was lost has no usage:
  it counts in dollars, at its input estimate, not in tokens). A run's token cap counts its own
  rows and its subagents' (as its usage always has); a subagent's, its own and its subagents'.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from longrun.models.canonical import canonical_json
from longrun.models.provider import Usage
from longrun.store.core import StoreCore, fetch, fetch_one
from longrun.store.tables_spend import BudgetRaiseRow, ModelRequestRow

__all__ = ["TOKENS_SUM", "BudgetRaiseRow", "ModelRequestRow", "RequestCost", "Settle", "Spend", "SpendMixin"]

_ROOT = """(WITH RECURSIVE up(run_id, parent_run_id) AS (
    SELECT run_id, parent_run_id FROM runs WHERE run_id = %(run_id)s::text
    UNION ALL SELECT r.run_id, r.parent_run_id FROM runs r JOIN up ON r.run_id = up.parent_run_id
) SELECT run_id FROM up WHERE parent_run_id IS NULL LIMIT 1)"""

_SENT_SQL = f"""
INSERT INTO model_requests (run_id, turn, overflow_retry, attempt, root_run_id, model, status, cost_usd, priced)
SELECT %(run_id)s::text, %(turn)s::integer, %(overflow_retry)s::integer, %(attempt)s::integer, coalesce({_ROOT}, %(run_id)s::text), %(model)s::text, 'sent',
       %(cost)s::numeric, %(priced)s::boolean
ON CONFLICT DO NOTHING
"""

_SETTLE_CTES = """target AS (
    SELECT run_id, turn, overflow_retry, attempt FROM model_requests
    WHERE run_id = %(run_id)s::text AND turn = %(turn)s::integer AND status = 'sent'{guard}
      AND NOT EXISTS (SELECT 1 FROM model_requests d WHERE d.run_id = %(run_id)s::text AND d.turn = %(turn)s::integer
                      AND d.transcript_seq = %(seq)s::integer)
    ORDER BY overflow_retry DESC, attempt DESC LIMIT 1
), settled AS (
    UPDATE model_requests m SET status = 'answered', usage = %(s_usage)s::json, cost_usd = %(s_cost)s::numeric,
        priced = %(s_priced)s::boolean, transcript_seq = %(seq)s::integer, answered_at = now()
    FROM target t
    WHERE m.run_id = t.run_id AND m.turn = t.turn AND m.overflow_retry = t.overflow_retry AND m.attempt = t.attempt
    RETURNING m.attempt
)"""

_SETTLE_SQL = "WITH " + _SETTLE_CTES.format(guard="") + "\nSELECT attempt FROM settled"

SETTLE_AFTER_APPEND = _SETTLE_CTES.format(guard="\n      AND EXISTS (SELECT FROM ins)")
"""The settle as common table expressions of a transcript append whose inserted row is `ins`
(`longrun.store.transcript`): the answer's entry and its settle in one statement, the settle only
when the entry was written."""


@dataclass(frozen=True)
class Settle:
    """What settling a turn's request needs besides its run, turn and entry: the answer's usage and
    cost (None: the model has no price)."""

    usage: Usage
    cost_usd: float | None

    def params(self) -> dict[str, Any]:
        return {"s_usage": canonical_json(self.usage.model_dump()), "s_cost": _dollars(self.cost_usd),
                "s_priced": self.cost_usd is not None}


_FAILED_SQL = """
UPDATE model_requests SET status = 'failed', cost_usd = CASE WHEN priced THEN 0 END, answered_at = now()
WHERE run_id = %(run_id)s::text AND turn = %(turn)s::integer AND overflow_retry = %(overflow_retry)s::integer AND attempt = %(attempt)s::integer
  AND status = 'sent'
"""

TOKENS_SUM = "coalesce(sum(tokens), 0)"
"""Input (all kinds) + output tokens of the answered requests among the rows summed (`tokens`,
generated from `usage`, migration 0015): what the token cap counts (`longrun.store.turn_reads` reads it for a run and its subagents with the turn's head)."""

_SUMS = f"""coalesce(sum(cost_usd), 0) AS dollars, count(*) FILTER (WHERE status = 'answered') AS requests,
    count(*) FILTER (WHERE NOT priced AND status <> 'failed') AS unpriced,
    count(*) FILTER (WHERE status = 'sent') AS unsettled,
    {TOKENS_SUM} AS tokens"""

_FAMILY_SQL = f"""
SELECT coalesce({_ROOT}, %(run_id)s::text) AS root_run_id, {_SUMS},
    (SELECT coalesce(sum(by_usd), 0) FROM budget_raises WHERE root_run_id = coalesce({_ROOT}, %(run_id)s::text)) AS raised
FROM model_requests WHERE root_run_id = coalesce({_ROOT}, %(run_id)s::text)
"""

_RUNS_SQL = f"SELECT run_id, {_SUMS} FROM model_requests WHERE run_id = ANY(%(run_ids)s) GROUP BY run_id"

_REQUESTS_SQL = """
SELECT turn, overflow_retry, attempt, model, status, usage, cost_usd, priced, transcript_seq
FROM model_requests WHERE run_id = %(run_id)s::text ORDER BY turn, overflow_retry, attempt
"""

_RAISE_SQL = f"""
INSERT INTO budget_raises (root_run_id, request_id, run_id, by_usd, approver, reason)
VALUES (coalesce({_ROOT}, %(run_id)s::text), %(request_id)s::text, %(run_id)s::text, %(by)s::numeric, %(approver)s::text, %(reason)s::text)
ON CONFLICT DO NOTHING
"""


@dataclass(frozen=True)
class Spend:
    """What a run (or a run family) has spent, from the ledger.

    Attributes:
        dollars: the priced requests' cost (unsettled ones at their input estimate).
        requests: answered requests.
        unpriced: requests on a model with no price: when any, `dollars` is not the whole spend.
        unsettled: requests sent whose answer is not (or never was) saved.
        tokens: input (all kinds) + output tokens of the answered requests.
        raised: dollars the family's budget was raised by (family sums only).
        root_run_id: the family's root (family sums only).
    """

    dollars: Decimal = Decimal(0)
    requests: int = 0
    unpriced: int = 0
    unsettled: int = 0
    tokens: int = 0
    raised: Decimal = Decimal(0)
    root_run_id: str = ""

    @property
    def known(self) -> float | None:
        """The dollars, or None when an unpriced request makes the total unknown."""
        return None if self.unpriced else float(self.dollars)


@dataclass(frozen=True)
class RequestCost:
    turn: int
    overflow_retry: int
    attempt: int
    model: str
    status: str
    usage: Usage | None
    cost_usd: float | None
    transcript_seq: int | None


def _dollars(value: float | None) -> Decimal | None:
    return None if value is None else Decimal(repr(value)).quantize(Decimal("0.000000001"))


def _spend(row: Any, **extra: Any) -> Spend:
    return Spend(dollars=Decimal(row.dollars), requests=row.requests, unpriced=row.unpriced, unsettled=row.unsettled,
                 tokens=int(row.tokens), **extra)


class SpendMixin(StoreCore):
    """The per-request spend ledger and the budget raises."""

    def record_request_sent(self, run_id: str, *, turn: int, overflow_retry: int, attempt: int, model: str,
                            estimate_usd: float | None) -> None:
        """A request about to go to the provider, at its input estimate (None: no price)."""
        params = {"run_id": run_id, "turn": turn, "overflow_retry": overflow_retry, "attempt": attempt,
                  "model": model[:500], "cost": _dollars(estimate_usd), "priced": estimate_usd is not None}
        self._autocommit("record_request_sent", lambda c: c.execute(_SENT_SQL, params))

    def record_request_failed(self, run_id: str, *, turn: int, overflow_retry: int, attempt: int) -> None:
        """The provider refused the request (an error, an overflow): it cost nothing."""
        params = {"run_id": run_id, "turn": turn, "overflow_retry": overflow_retry, "attempt": attempt}
        self._autocommit("record_request_failed", lambda c: c.execute(_FAILED_SQL, params))

    def settle_turn(self, run_id: str, *, turn: int, transcript_seq: int, usage: Usage, cost_usd: float | None) -> bool:
        """The answer of `turn` (its assistant message is entry `transcript_seq`) on the newest
        request sent for it. Idempotent: False when the turn was settled already (or no request
        of it is in the ledger: a run from before it)."""
        params = {"run_id": run_id, "turn": turn, "seq": transcript_seq, **Settle(usage, cost_usd).params()}
        return bool(self._autocommit("settle_turn", lambda c: fetch(c, _SETTLE_SQL, params)))

    def family_spend(self, run_id: str) -> Spend:
        """The spend of `run_id`'s family (its root and every subagent under it), with the raises."""
        row = self._autocommit("family_spend", lambda c: fetch_one(c, _FAMILY_SQL, {"run_id": run_id}))
        assert row is not None
        return _spend(row, raised=Decimal(row.raised), root_run_id=row.root_run_id)

    def run_spend(self, run_ids: list[str]) -> dict[str, Spend]:
        """The spend of each run (itself only), by run id; a run with no request is absent."""
        rows = self._autocommit("run_spend", lambda c: fetch(c, _RUNS_SQL, {"run_ids": list(run_ids)}))
        return {r.run_id: _spend(r) for r in rows}

    def request_costs(self, run_id: str) -> list[RequestCost]:
        """Every model request of a run, in order, with its usage and cost."""
        rows = self._autocommit("request_costs", lambda c: fetch(c, _REQUESTS_SQL, {"run_id": run_id}))
        return [RequestCost(r.turn, r.overflow_retry, r.attempt, r.model, r.status,
                            None if r.usage is None else Usage.model_validate(r.usage),
                            None if r.cost_usd is None else float(r.cost_usd), r.transcript_seq) for r in rows]

    def record_budget_raise(self, run_id: str, *, request_id: str, by_usd: float, approver: str, reason: str) -> bool:
        """Raise the budget of `run_id`'s family by `by_usd`, once per budget request.

        Returns:
            False when this request was raised already (a retried activity)."""
        params = {"run_id": run_id, "request_id": request_id, "by": _dollars(by_usd), "approver": approver,
                  "reason": reason[:2000]}
        return bool(self._autocommit("record_budget_raise", lambda c: c.execute(_RAISE_SQL, params).rowcount))
