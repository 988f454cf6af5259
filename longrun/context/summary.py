"""Stage 2's summaries: the Summarizer protocol, the deterministic extractive summarizer (the
offline one and the fallback) and the validation every summary passes before it is used.

A summary is material, never authority: what it claims about approvals, effects or the next
action is checked against TaskState, and the state block (rendered from the database) is sent
beside it in every request anyway.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from longrun.context import index, layout
from longrun.context.tokens import estimate_text
from longrun.models.blocks import Message, TextBlock, ToolUseBlock
from longrun.models.state import EffectStatus, NextAction, TaskState

OPEN_TAG = "<summary_of_earlier_work>"
CLOSE_TAG = "</summary_of_earlier_work>"
SECTIONS = ("Goal", "Progress", "Facts", "Decisions", "Next step")


class Summarizer(Protocol):
    def summarize(self, messages: list[Message], previous_summary: str | None, state: TaskState, max_tokens: int) -> str: ...


# --- validation -------------------------------------------------------------------------------

_NEG = r"(?<!not )(?<!un)(?<!no )(?<!awaiting )(?<!pending )(?<!needs )(?<!requires )(?<!without )(?<!for )"
_APPROVAL_CLAIM = re.compile(
    _NEG + r"\b(approved|approval (?:was |has been |is )?(?:granted|given|obtained|received)|(?:granted|gave) (?:the )?approval)\b",
    re.I,
)
_NEXT_ACTION_CLAIM = re.compile(r"next[ _]action\W{0,6}(?:is|was|=|:|->|set to)?\W{0,4}(" + "|".join(a.value for a in NextAction) + r")\b", re.I)
_CONFIRMED = re.compile(_NEG + r"\b(confirmed|succeeded|completed)\b", re.I)
_EFFECT_WORD = re.compile(r"\beffects?\b", re.I)


def contradiction(text: str, state: TaskState) -> str | None:
    """Why `text` contradicts `state` (claims an approval, a confirmed effect or a next action the
    state does not have), or None."""
    if _APPROVAL_CLAIM.search(text) and not any(not a.used for a in state.approvals):
        return "claims an approval the task state does not have"
    for m in _NEXT_ACTION_CLAIM.finditer(text):
        if m.group(1).lower() != state.next_action.value:
            return f"claims next_action {m.group(1).lower()!r}, the task state says {state.next_action.value!r}"
    confirmed = {e.action_id for e in state.effects if e.status is EffectStatus.confirmed}
    for line in text.splitlines():
        if not _CONFIRMED.search(line):
            continue
        for e in state.effects:
            if e.action_id in line and e.action_id not in confirmed:
                return f"claims effect {e.action_id!r} is confirmed, the task state says {e.status.value!r}"
        if _EFFECT_WORD.search(line) and not confirmed:
            return "claims a confirmed effect, the task state has none"
    return None


def validate_summary(summary: str, replaced_tokens: int, state: TaskState) -> str | None:
    """Reason to reject `summary` as the stand-in for `replaced_tokens` of conversation, or None.

    Rejected: empty; not smaller than what it replaces; contradicting the state."""
    if not summary or not summary.strip():
        return "empty summary"
    tokens = estimate_text(summary)
    if tokens >= replaced_tokens:
        return f"summary ({tokens} tokens) is not smaller than what it replaces ({replaced_tokens} tokens)"
    return contradiction(summary, state)


# --- extractive summarizer --------------------------------------------------------------------

_FIRST_SENTENCE = re.compile(r"^(.{20,240}?[.!?])(?:\s|$)", re.S)
_BULLET_SECTION = re.compile(r"^## (.+?)\n(.*?)(?=^## |\Z)", re.S | re.M)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'`(\[*-])")
_CONCRETE = re.compile(
    r"[\w.~-]*/[\w./~-]+"                   # paths
    r"|\b\w+\.[a-z]{1,5}\b"                 # file names
    r"|\b\w*\d\w*(?:[:.]\d+)*\b"             # numbers, times, ids with digits
    r"|\b[A-Za-z]+_[A-Za-z0-9_]+\b"          # snake_case and CONSTANT_NAMES
    r"|\b[A-Z][A-Z0-9]+(?:-[A-Z0-9]+)+\b"    # KEY-123 style ids
    r"|\"[^\"\n]{1,120}\"|`[^`\n]{1,120}`"    # quoted values
)
_BECAUSE = re.compile(r"\b(because|due to|caused by|root cause)\b", re.I)
MAX_FACT_CHARS = 600
_DROPPED = re.compile(r"^- \((\d+) earlier (\w+) dropped for size\)$")
_OLD_MARKER = "- (older entries dropped for size)"


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    m = _FIRST_SENTENCE.match(text)
    s = m.group(1) if m else text[:240]
    return s


def sentences(text: str) -> list[str]:
    """`text` as sentences, whitespace normalized."""
    flat = " ".join(text.split())
    return [s for s in _SENTENCE_END.split(flat) if s]


def concrete(text: str) -> set[str]:
    """The concrete tokens of a text: paths, file names, numbers and ids of two characters or
    more, identifiers, quoted values."""
    return {t for t in _CONCRETE.findall(text) if len(t) > 1}


def fact_sentences(text: str, known: str = "") -> list[str]:
    """Sentences of an assistant text that carry a concrete fact (a path, a number, an
    identifier, a quoted value, or a reason) that `known` (the turn's own tool inputs) does not
    already hold; each whole (up to MAX_FACT_CHARS)."""
    out = []
    for s in sentences(text):
        if len(s) > MAX_FACT_CHARS:
            continue
        if _BECAUSE.search(s) or any(t.strip("\"`") not in known for t in concrete(s)):
            out.append(s)
    return out


def _input_text(value: object) -> str:
    """Every string and number in a tool input, one per line (what `fact_sentences` checks
    a sentence's concrete tokens against)."""
    if isinstance(value, dict):
        return "\n".join(_input_text(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return "\n".join(_input_text(v) for v in value)
    return str(value)


def previous_sections(previous: str | None) -> dict[str, list[str]]:
    """The bullet lines of each `## Section` of an earlier summary (how a summary is folded)."""
    out: dict[str, list[str]] = {}
    if not previous:
        return out
    found = False
    for m in _BULLET_SECTION.finditer(previous):
        found = True
        lines = [ln.rstrip() for ln in m.group(2).splitlines() if ln.strip()]
        out.setdefault(m.group(1).strip(), []).extend(lines)
    if not found:
        out["Progress"] = [f"- earlier: {_sentence(previous)}"]
    return out


class ExtractiveSummarizer:
    """Deterministic, model-free summary in the five sections. Goal, decisions and next step come
    from the TaskState; progress from the assistant's own first sentences; facts from the
    assistant's sentences that carry a concrete fact (a path, number, identifier, quoted value or
    reason beyond what the turn's tool inputs say), verbatim. The tool calls themselves (their
    commands, paths and artifacts) are in the results index `compact` keeps beside the summary.
    When over `max_tokens`, whole lines go, oldest first: progress before facts, with a count of
    what went. Lines that would contradict the state are skipped.

    With `facts=False` (how `compact` uses it beside the fact ledger) the Facts section holds
    only what earlier summaries had there, since the ledger quotes those sentences already; and the goal is the objective's
    first GOAL_CHARS characters either way, since the task state carries it whole."""

    def __init__(self, facts: bool = True) -> None:
        self.facts = facts

    def summarize(self, messages: list[Message], previous_summary: str | None, state: TaskState, max_tokens: int) -> str:
        prev = previous_sections(previous_summary)
        dropped = {"progress": 0, "facts": 0}
        progress = _take_markers(prev.get("Progress", []), dropped)
        facts = [ln for ln in _take_markers(prev.get("Facts", []), dropped) if not layout.OLD_REF.match(ln)]
        for m in messages:
            if m.role != "assistant":
                continue
            known = "\n".join(_input_text(b.input) for b in m.content if isinstance(b, ToolUseBlock))
            for b in m.content:
                if not isinstance(b, TextBlock) or not b.text.strip():
                    continue
                found = fact_sentences(b.text, known)
                if self.facts:
                    facts.extend(f"- {s}" for s in found)
                first = _sentence(b.text)
                if not any(first in f or f in first for f in found):
                    progress.append(f"- {first}")
        decisions = [f"- {d.summary}" + (f" (because {d.reason})" if d.reason else "") for d in state.decisions]
        next_step = [f"- current step {state.current_step.value}; next action per the task state: {state.next_action.value}"]
        if state.unknown_effects():
            next_step.append(f"- effects with unknown outcome must be reconciled first: "
                             f"{', '.join(e.action_id for e in state.unknown_effects())}")
        sections = {
            "Goal": [_goal(state.objective)],
            "Progress": [ln for ln in _dedup(progress) if not contradiction(ln, state)],
            "Facts": [ln for ln in _dedup(facts) if not contradiction(ln, state)],
            "Decisions": decisions or ["- none recorded"],
            "Next step": next_step,
        }
        return _fit(sections, max_tokens, dropped)


GOAL_CHARS = 120


def _goal(objective: str) -> str:
    flat = " ".join(objective.split())
    if len(flat) <= GOAL_CHARS:
        return flat
    return flat[: flat.rfind(" ", 0, GOAL_CHARS)] + " … (the objective in full is in the task state)"


def _take_markers(lines: Sequence[str], dropped: dict[str, int]) -> list[str]:
    """`lines` without drop markers, whose counts are added to `dropped`."""
    out = []
    for ln in lines:
        m = _DROPPED.match(ln)
        if m:
            dropped[m.group(2)] = dropped.get(m.group(2), 0) + int(m.group(1))
        elif ln != _OLD_MARKER:
            out.append(ln)
    return out


def _dedup(lines: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(lines))  # first occurrences, in order


def _render(sections: dict[str, list[str]]) -> str:
    return "\n".join(f"## {name}\n" + "\n".join(lines) for name, lines in sections.items())


def _with_markers(sections: dict[str, list[str]], dropped: dict[str, int]) -> dict[str, list[str]]:
    out = dict(sections)
    for name, key in (("Progress", "progress"), ("Facts", "facts"), ("Decisions", "decisions")):
        if dropped.get(key):
            out[name] = [f"- ({dropped[key]} earlier {key} dropped for size)", *out[name]]
    return out


def _fit(sections: dict[str, list[str]], max_tokens: int, dropped: dict[str, int] | None = None) -> str:
    """The rendered sections within `max_tokens`: whole lines go, oldest first (progress, then
    facts, then decisions), each section saying how many it lost; nothing is cut mid-line except,
    as the very last resort, the goal (the objective is in the task state block anyway)."""
    dropped = dict(dropped or {})
    text = _render(_with_markers(sections, dropped))
    for name, key in (("Progress", "progress"), ("Facts", "facts"), ("Decisions", "decisions")):
        while estimate_text(text) > max_tokens and sections[name]:
            excess = estimate_text(text) - max_tokens
            lines = sections[name]
            freed = k = 0
            while k < len(lines) and freed < excess:
                freed += estimate_text(lines[k]) + 1
                k += 1
            sections[name] = lines[k:]
            dropped[key] = dropped.get(key, 0) + k
            text = _render(_with_markers(sections, dropped))
    if estimate_text(text) > max_tokens:
        goal = sections["Goal"][0] if sections["Goal"] else ""
        over = len(text) - int(len(text) * max_tokens / max(1, estimate_text(text)))
        sections["Goal"] = [goal[: max(80, len(goal) - over - 40)] + " … (the objective in full is in the task state)"]
        text = _render(_with_markers(sections, dropped))
    return text


# --- the summary's layout (see layout.py) ---------------------------------------------------

def split_summary(summary: str | None) -> tuple[str | None, int, list[str], list[str]]:
    """(body, index entries cut so far, index lines, verbatim user messages) of a summary written
    by `compact` (the ledger is in `layout.parse`)."""
    p = layout.parse(summary)
    return p.body, p.cut, p.lines, p.users


def summary_references(summary: str | None) -> list[dict[str, str]]:
    """The artifacts a summary names (results summarized away): its results index, and the Facts
    lines of summaries written before the index existed."""
    out = index.references(summary)
    _, old = layout.old_references(summary)
    out += [{"sha256": sha, "tool": tool, "stage": "summarized"} for sha, tool, _ in old]
    return out
