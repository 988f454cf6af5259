"""The context pipeline as pure functions, and a run's fact store: the stable entry for the CLI,
the activities and any caller (docs/CONTEXT.md describes each step).

    compact(...)            -> Projection          stages 0-3 at a compaction (after the state commit)
    should_compact(...)     -> Trigger | None      when to compact
    render_request(...)     -> ModelRequest        cache-aware layout, state block last
    fit_request(...)        -> (ModelRequest, freed)   stage 3 at send time, every request
    FactStore(rows)                                a run's fact store: current(), extend(units)
    select_facts(store, budget) -> Selection       the store's selection: what a projection shows
    recall(store, query, kind=) -> Recalled        what the `recall` tool answers the model
    list_facts(rows, projection) -> FactListing    each fact, current or not, shown or left out

Names not listed in `__all__` (the submodules' own functions) may change without notice.
"""

from longrun.context.compact import compact, should_compact
from longrun.context.enforce import fit_request
from longrun.context.factstore import FactStore
from longrun.context.listing import FactListing, ListedFact, list_facts
from longrun.context.lookup import Recalled, recall
from longrun.context.render import render_request, summary_text
from longrun.context.selection import Selection, select_facts
from longrun.context.state_block import parse_state_block, render_state_block
from longrun.context.summary import ExtractiveSummarizer, Summarizer, validate_summary
from longrun.context.tokens import Calibration, estimate_message, estimate_messages, estimate_request, estimate_text
from longrun.context.transcript import cleared_references, strip_internal

__all__ = [
    "Calibration", "ExtractiveSummarizer", "FactListing", "FactStore", "ListedFact", "Recalled", "Selection",
    "Summarizer", "cleared_references", "compact", "estimate_message", "estimate_messages", "estimate_request",
    "estimate_text", "fit_request", "list_facts", "parse_state_block", "recall", "render_request",
    "render_state_block", "select_facts", "should_compact", "strip_internal", "summary_text", "validate_summary",
]
