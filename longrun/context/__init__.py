"""The context pipeline as pure functions: estimator, calibration, stages 0-3, rendering.

    compact(...)          -> Projection        stages 0-3 at a compaction (after the state commit)
    should_compact(...)   -> Trigger | None    when to compact
    render_request(...)   -> ModelRequest      cache-aware layout, state block last
    fit_request(...)      -> (ModelRequest, freed)   stage 3 at send time, every request
    FactStore(rows)                            a run's fact store: current(), recall(words), extend()
"""

from longrun.context.compact import compact, should_compact
from longrun.context.enforce import fit_request
from longrun.context.factstore import FactStore
from longrun.context.render import render_request, summary_text
from longrun.context.state_block import parse_state_block, render_state_block
from longrun.context.summary import ExtractiveSummarizer, Summarizer, validate_summary
from longrun.context.tokens import Calibration, estimate_message, estimate_messages, estimate_request, estimate_text
from longrun.context.transcript import cleared_references, strip_internal

__all__ = [
    "Calibration", "ExtractiveSummarizer", "FactStore", "Summarizer", "cleared_references", "compact", "estimate_message",
    "estimate_messages", "estimate_request", "estimate_text", "fit_request", "parse_state_block",
    "render_request", "render_state_block", "should_compact", "strip_internal", "summary_text", "validate_summary",
]
