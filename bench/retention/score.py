"""Scoring a projection: which probes are still answerable, and what it presents wrongly.

The text scored is the projection as it would be sent: every text block, every tool_use input
as JSON, every tool_result's content, in message order. It is split into lines; a line longer
than 400 characters is split into sentences (a summary that runs facts together into one
paragraph is not penalised for it, but cannot pair a subject with a value sentences away).

- kept: some line holds the probe's subject and answer (`probe.answers`).
- superseded presented as current (corrections only): among the lines that mention the subject
  with the final or an old value, the last one in projection order mentions an old value, not
  the final one, and carries no marker (superseded, obsolete, was, previously, corrected,
  replaced, instead, not, rejected, reverted, dropped, ...). Target 0.
- constraints verbatim: each constraint of the state appears byte for byte.
- orphans: tool_use blocks without their result in the next message, and results without their
  use in the previous one (what the API rejects). Target 0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.retention.probe import CATEGORIES, Probe, answers, mentions

LONG_LINE = 400
_SENTENCE = re.compile(r"(?<=[.!?;])\s+")
MARKERS = re.compile(
    r"\b(superseded|supersedes|obsolete|was|previously|previous|corrected|correction|replaced|instead|not|"
    r"no longer|formerly|outdated|old|earlier|scratch|changed from|rejected|reverted|reverting|dropped|ruled out|"
    r"abandoned|scrapped|vetoed)\b", re.I)


def texts(messages: Sequence[dict[str, Any]]) -> list[str]:
    """The texts of wire-format messages in order: text blocks, tool inputs as JSON, results."""
    out: list[str] = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            out.append(content)
            continue
        for b in content or []:
            kind = b.get("type")
            if kind == "text":
                out.append(str(b.get("text", "")))
            elif kind == "tool_use":
                out.append(json.dumps(b.get("input", {}), ensure_ascii=False))
            elif kind == "tool_result":
                c = b.get("content", "")
                if isinstance(c, str):
                    out.append(c)
                else:
                    out.extend(str(x.get("text", "")) for x in c if isinstance(x, dict) and x.get("type") == "text")
    return out


def lines(parts: Iterable[str]) -> list[str]:
    out: list[str] = []
    for part in parts:
        for line in part.split("\n"):
            if len(line) > LONG_LINE:
                out.extend(s for s in _SENTENCE.split(line) if s)
            elif line.strip():
                out.append(line)
    return out


def orphans(messages: Sequence[dict[str, Any]]) -> int:
    def blocks(m: dict[str, Any] | None, kind: str) -> list[dict[str, Any]]:
        if m is None or not isinstance(m.get("content"), list):
            return []
        return [b for b in m["content"] if isinstance(b, dict) and b.get("type") == kind]

    n = 0
    for i, m in enumerate(messages):
        nxt = messages[i + 1] if i + 1 < len(messages) else None
        prev = messages[i - 1] if i > 0 else None
        if m.get("role") == "assistant":
            answered = {b.get("tool_use_id") for b in blocks(nxt, "tool_result")} if nxt and nxt.get("role") == "user" else set()
            n += sum(1 for b in blocks(m, "tool_use") if b.get("id") not in answered)
        else:
            used = {b.get("id") for b in blocks(prev, "tool_use")} if prev and prev.get("role") == "assistant" else set()
            n += sum(1 for b in blocks(m, "tool_result") if b.get("tool_use_id") not in used)
    return n


def superseded_line(probe: Probe, text_lines: Sequence[str]) -> str | None:
    """The line that shows an old value as if it were current: the last line pairing the subject
    with the final or an old value, when it has an old one, not the final, and no marker."""
    if not probe.superseded:
        return None
    last = None
    for line in text_lines:
        if mentions(line, probe.subject) and (mentions(line, probe.answer) or any(mentions(line, o) for o in probe.superseded)):
            last = line
    if last is None or mentions(last, probe.answer) or MARKERS.search(last):
        return None
    return last


def superseded_as_current(probe: Probe, text_lines: Sequence[str]) -> bool:
    return superseded_line(probe, text_lines) is not None


@dataclass
class Score:
    """The figures of one projection of one conversation."""

    kept: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    total: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    missed: list[Probe] = field(default_factory=list)
    superseded: list[Probe] = field(default_factory=list)
    superseded_lines: list[str] = field(default_factory=list)
    answer_elsewhere: set[str] = field(default_factory=set)  # missed subjects whose answer is somewhere else
    constraints_kept: int = 0
    constraints_total: int = 0
    orphans: int = 0
    tokens: int = 0
    budget: int = 0

    @property
    def kept_all(self) -> int:
        return sum(self.kept.values())

    @property
    def total_all(self) -> int:
        return sum(self.total.values())


def score(messages: Sequence[dict[str, Any]], probes: Sequence[Probe], constraints: Sequence[str], *,
          tokens: int = 0, budget: int = 0) -> Score:
    parts = texts(messages)
    whole = "\n".join(parts)
    text_lines = lines(parts)
    lowered = [x.lower() for x in text_lines]
    s = Score(tokens=tokens, budget=budget, orphans=orphans(messages), constraints_total=len(constraints),
              constraints_kept=sum(1 for c in constraints if c in whole))
    for p in probes:
        s.total[p.category] += 1
        subj = p.subject.lower()
        if any(subj in low and answers(line, p.subject, p.answer) for line, low in zip(text_lines, lowered, strict=True)):
            s.kept[p.category] += 1
        else:
            s.missed.append(p)
            if any(mentions(line, p.answer) for line in text_lines):
                s.answer_elsewhere.add(p.subject)
        bad = superseded_line(p, text_lines)
        if bad is not None:
            s.superseded.append(p)
            s.superseded_lines.append(bad)
    return s
