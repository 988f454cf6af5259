"""The store's selection: which of a run's current facts a projection shows under a budget.

A projection never folds the previous one's facts forward (issue 25, cause 4); it selects from
every current row of the store, by priority class (rules, decisions, values and relations,
statuses, preferences), then information per token (`ledger.select`). This is that step on its
own, for a caller that holds a store and a budget: it returns the rows shown, the rows left out
(one `recall` away) and the ledger text the model would read.

`compact()` runs the same `ledger.select` on the store's entries, less those it already shows
another way (a tool result quoted whole on its index line, a human message quoted verbatim), and
splits its room with the summary body; so inside a compaction the figures can differ by those.

Tests: tests/test_context_api.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from longrun.context import ledger
from longrun.context.factstore import FactStore
from longrun.models.context import FactRow


@dataclass(frozen=True)
class Selection:
    """The current facts a budget fits (`shown`), those it does not (`left_out`), both in the
    order they were said, and the ledger section that shows them (`text`, "" for no facts)."""

    shown: list[FactRow]
    left_out: list[FactRow]
    text: str


def select_facts(store: FactStore, budget: int) -> Selection:
    """The current facts of `store` that fit `budget` tokens, rendered as the fact ledger.

    Args:
        store: a run's fact store; not modified.
        budget: tokens the ledger may take, its header and the left-out note included.

    Returns:
        A `Selection`. A fact left out now is still in the store: a later selection with more
        room, or `recall`, shows it.
    """
    entries = store.entries()
    left, kept = ledger.select(entries, budget)
    by_seq = {r.seq: r for r in store.rows}
    kept_rows = {e.row for e in kept}
    shown = [by_seq[e.row] for e in entries if e.row in kept_rows and e.row is not None]
    out = [by_seq[e.row] for e in entries if e.row not in kept_rows and e.row is not None]
    return Selection(shown=shown, left_out=out, text=ledger.render(left, kept))
