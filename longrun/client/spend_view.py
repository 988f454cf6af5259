"""How a run's spend reads to a person: one line for `usage`, `status` and the demo, and one
cell for `runs`. A total with a request on an unpriced model says "no price", never $0."""

from __future__ import annotations

from longrun.providers.prices import SCRIPTED_NOTE, format_dollars
from longrun.store.spend import Spend


def spend_cell(spend: Spend | None) -> str:
    """The spend of one run in a table: dollars, "no price", or "-" before its first request."""
    if spend is None:
        return "-"
    return format_dollars(spend.known)


def spend_line(run_id: str, family: Spend, model: str, max_cost: float | None = None) -> str:
    """What the run family spent (and of which budget), with what a reader must know about it."""
    text = f"spend: {format_dollars(family.known)}"
    if model == "scripted" and family.known == 0:
        text += f" — {SCRIPTED_NOTE}"
    if max_cost is not None:
        text += f" of a budget of ${max_cost + float(family.raised):,.2f}"
        if family.raised:
            text += f" (raised by ${float(family.raised):,.2f})"
    if family.unpriced:
        text += f"; {family.unpriced} request(s) on a model with no price: the total is unknown (set LONGRUN_PRICES)"
    if family.root_run_id and family.root_run_id != run_id:
        text += f"; the family of {family.root_run_id}"
    if family.unsettled:
        text += f"; {family.unsettled} request(s) sent without a saved answer, counted at their input estimate"
    return text


__all__ = ["spend_cell", "spend_line"]
