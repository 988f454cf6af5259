"""`longrun.context`'s documented API (issue 25): the names a caller may rely on are pinned, and the
CLI and the `recall` tool reach the store's selection and recall only through them, so the
entry a caller uses is the one the product uses."""

from __future__ import annotations

import ast
from pathlib import Path

import longrun.context as context
from longrun.context import FactStore, list_facts, recall, select_facts
from longrun.context.facts import analyse
from tests.support.pyast import parse

ROOT = Path(__file__).resolve().parents[1]

STABLE = [
    "Calibration", "ExtractiveSummarizer", "FactListing", "FactStore", "ListedFact", "Recalled", "Selection",
    "Summarizer", "cleared_references", "compact", "estimate_message", "estimate_messages", "estimate_request",
    "estimate_text", "fit_request", "list_facts", "parse_state_block", "recall", "render_request",
    "render_state_block", "select_facts", "should_compact", "strip_internal", "summary_text", "validate_summary",
]


def test_the_public_names_are_pinned_and_documented() -> None:
    assert sorted(context.__all__) == STABLE  # adding or removing one is a decision: change this list with it
    for name in ("compact", "select_facts", "recall", "list_facts", "FactStore"):
        doc = getattr(context, name).__doc__
        assert doc and len(doc.split()) > 8, f"longrun.context.{name} needs a docstring that says what and why"
        assert name in (context.__doc__ or ""), f"the package docstring should list {name}"


def _store() -> FactStore:
    store = FactStore()
    lines = ["billing-svc listens on port 8443.", "Never deploy on Fridays.",
             "Actually billing-svc listens on port 9443.", "The dashboard shows p50 and p95 side by side."]
    store.extend([(analyse(t, "user", order=i), i) for i, t in enumerate(lines, 1)])
    return store


def test_the_selection_shows_rules_first_and_names_what_it_left_out() -> None:
    store = _store()
    everything = select_facts(store, 10_000)
    assert [r.seq for r in everything.shown] == [2, 3, 4] and everything.left_out == []  # row 1 was superseded
    assert "8443" not in everything.text and "port 9443" in everything.text
    # the tightest budget that shows anything shows the rule (priority class 1), not the values
    tight = next(sel for b in range(0, 2_000, 5) if (sel := select_facts(store, b)).shown)
    assert [r.text for r in tight.shown] == ["Never deploy on Fridays."]
    assert tight.left_out and {r.seq for r in tight.shown} | {r.seq for r in tight.left_out} == {2, 3, 4}
    assert f"({len(tight.left_out)} lower-information facts left out" in tight.text
    assert all(r.text not in tight.text for r in tight.left_out)


def test_recall_marks_the_superseded_value_and_lists_the_current_one_first() -> None:
    found = recall(_store(), "billing-svc port")
    assert [r.seq for r in found.current] == [3] and [r.seq for r in found.superseded] == [1]
    text = found.render().splitlines()
    assert text[0] == "1 current and 1 superseded fact(s) match 'billing-svc port':"
    assert text[1].endswith("Actually billing-svc listens on port 9443.")
    assert "  SUPERSEDED by fact 3 (transcript seq 3)" in text
    assert not recall(_store(), "kubernetes").found


def test_list_facts_without_a_projection_says_so() -> None:
    listing = list_facts(_store().rows, None, include_superseded=True)
    assert (listing.current, listing.total, listing.left_out) == (3, 4, 0)
    assert [(f.row.seq, f.superseded_by, f.last_projection) for f in listing.facts] == \
        [(1, 3, None), (2, None, "no projection"), (3, None, "no projection"), (4, None, "no projection")]


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("longrun.context"):
            names |= {f"{node.module}.{a.name}" for a in node.names}
    return names


def test_the_cli_and_the_recall_tool_use_the_public_names() -> None:
    facts_cmd = _imports(ROOT / "longrun/cli/commands/facts.py")
    tool = _imports(ROOT / "longrun/tools/recall.py")
    compact_cmd = _imports(ROOT / "longrun/cli/compact_cmd.py")
    views = _imports(ROOT / "longrun/console/views.py")
    assert facts_cmd == {"longrun.context.list_facts"}
    assert tool == {"longrun.context.FactStore", "longrun.context.recall"}
    assert "longrun.context.compact" in compact_cmd
    assert "longrun.context.list_facts" in views
