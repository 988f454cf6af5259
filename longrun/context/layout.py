"""The summary message's parts and their order: how `compact` writes a summary and reads it back.

    <body: the summarizer's text, capped>
    ## Earlier tool results ...        (the results index, mechanical)
    ## User messages (verbatim) ...    (the human's instructions, byte for byte)
    ## Fact ledger ...                 (facts quoted verbatim, latest value per subject)

Only the body is ever written by a model. The ledger comes last so that, read top to bottom, the
latest value of anything is the last one said: a verbatim user message above it may hold a value
that a later correction superseded, and the ledger then says the final one after it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from longrun.context import humans, index, ledger
from longrun.context.ledger import Entry
from longrun.context.tokens import estimate_text
from longrun.models.blocks import Message, TextBlock

USER_SECTION = "## User messages (verbatim)"
"""The human's instructions kept whatever the summarizer (a model summary may paraphrase; this
part is never delegated)."""
_USER_MSG = re.compile(r"<user_message>\n(.*?)\n</user_message>", re.S)
OLD_REF = re.compile(r"^- sha256:([0-9a-f]{64}) = (\S+)(?: (.*))?$")


@dataclass
class SummaryParts:
    body: str | None = None
    cut: int = 0
    """Index entries cut so far (stage 3)."""
    lines: list[str] = field(default_factory=list)
    users: list[str] = field(default_factory=list)
    left_out: int = 0
    """Ledger facts left out for size so far."""
    facts: list[Entry] = field(default_factory=list)

    def render(self) -> str:
        parts = [p for p in (neutralise(self.body) if self.body else None, index.render(self.cut, self.lines)) if p]
        text = "\n\n".join(parts)
        if self.users:
            text += ("\n\n" if text else "") + USER_SECTION + "\n" + "\n".join(
                f"<user_message>\n{t}\n</user_message>" for t in self.users)
        led = ledger.render(self.left_out, self.facts)
        if led:
            text += ("\n\n" if text else "") + led
        return text


_STRUCTURE_TAGS = re.compile(r"</?(user_message|task_state|summary_of_earlier_work)>")
_SECTION_HEADS = (index.INDEX_SECTION, USER_SECTION, ledger.LEDGER_SECTION)


def neutralise(body: str) -> str:
    """The summarizer's body with the summary's own structure made inert: a body (a model's
    text, or the assistant sentences the extractive one quotes) that writes a section heading of
    the index, the human's messages or the ledger, or a `<user_message>`/`<task_state>` tag,
    would otherwise be read back as that structure at the next fold - a forged "human message"
    or ledger line. Headings get a `(quoted)` mark, tags angle quotes."""
    out = []
    for line in body.split("\n"):
        stripped = line.lstrip()
        if any(stripped.startswith(head) for head in _SECTION_HEADS):
            line = line.replace("## ", "## (quoted) ", 1)
        out.append(_STRUCTURE_TAGS.sub(lambda m: f"‹{m.group(0)[1:-1]}›", line))
    return "\n".join(out)


def parse(summary: str | None, users_given: list[str] | None = None) -> SummaryParts:
    """The parts of a summary written by `compact` (any older layout included: artifact lines
    that summaries written before the index kept in their Facts move into the index).

    Args:
        users_given: the human's messages the summary quotes, as the projection keeps them
            (`Projection.summary_users`): used instead of what the text's user section holds, so
            no text, not even a human's own `</user_message>`, decides what reads as a human's
            message at the next fold. None for a projection written before they were kept."""
    parts = SummaryParts()
    if not summary:
        parts.users = list(users_given or [])
        return parts
    rest = summary
    if rest.startswith(ledger.LEDGER_SECTION):
        rest, led = "", rest
    else:
        at = rest.rfind("\n\n" + ledger.LEDGER_SECTION)
        rest, led = (rest[:at], rest[at + 2:]) if at >= 0 else (rest, "")
    parts.left_out, parts.facts = ledger.parse(led)
    if rest.startswith(USER_SECTION + "\n"):
        rest, users = "", rest
    else:
        head, sep, tail = rest.partition("\n\n" + USER_SECTION + "\n")
        rest, users = (head, tail) if sep else (rest, "")
    parts.users = _USER_MSG.findall(users) if users_given is None else list(users_given)
    section = ""
    body: str | None = rest
    if rest.startswith(index.INDEX_SECTION):
        body, section = "", rest
    else:
        at = rest.rfind("\n\n" + index.INDEX_SECTION)
        if at >= 0:
            body, section = rest[:at], rest[at + 2:]
    parts.cut, parts.lines = index.parse(section)
    body, old = old_references(body)
    if old:
        parts.lines = index.fold([index.entry(sha, tool, arg) for sha, tool, arg in old], parts.lines)
    parts.body = body or None
    return parts


def old_references(body: str | None) -> tuple[str | None, list[tuple[str, str, str]]]:
    """(body without them, [(sha256, tool, arg)]): the artifact lines that summaries written
    before the results index kept in their Facts section (migrated into the index on fold)."""
    if not body or "- sha256:" not in body:
        return body, []
    refs: list[tuple[str, str, str]] = []
    kept: list[str] = []
    for ln in body.split("\n"):
        m = OLD_REF.match(ln)
        if m:
            refs.append((m.group(1), m.group(2), m.group(3) or ""))
        else:
            kept.append(ln)
    return "\n".join(kept), refs


def fit(summary: str | None, free: int, users: list[str] | None = None) -> str | None:
    """Stage 3's last resort on a summary: its oldest index lines go (their artifacts are still
    stored), then the ledger's least informative facts (the transcript keeps them), counted,
    until `free` tokens are freed. `users`: as for `parse`."""
    if not summary or free <= 0:
        return summary
    parts = parse(summary, users)
    if not parts.lines and not parts.facts:
        return summary
    _shrink(parts, free, estimate_text(summary), index_only=False)
    return parts.render()


def _shrink(parts: SummaryParts, free: int, start: int, *, index_only: bool) -> None:
    """The oldest index lines (and, unless `index_only`, the least informative ledger facts) of
    `parts` go until the rendered summary is `free` tokens under `start`."""
    want = free
    for _ in range(4):  # the estimate of a whole text is not the sum of its lines': shrink until it is
        before = index.cost(parts.cut, parts.lines)
        parts.cut, parts.lines = index.shrink(parts.cut, parts.lines, want)
        rest = want - (before - index.cost(parts.cut, parts.lines))
        if rest > 0 and parts.facts and not index_only:
            budget = max(0, ledger.cost(parts.left_out, parts.facts) - rest)
            parts.left_out, parts.facts = ledger.select(parts.facts, budget, parts.left_out)
        short = free - (start - estimate_text(parts.render()))
        if short <= 0 or not (parts.lines or (parts.facts and not index_only)):
            break
        want = short


def fit_all(summary: str | None, free: int, users: list[str] | None = None) -> tuple[str | None, list[str] | None, int]:
    """The very last resort on a summary, so that no compaction and no request ever exceeds its
    limit for want of trimming it (issue 25, cause 8), least worth first: the oldest index lines
    (their artifacts are stored), the quoted human messages without an instruction or a fact
    (context a fact outranks), the body, the least informative ledger facts, the other quoted
    messages, oldest first (their facts are in the fact store, and the transcript keeps them),
    then the bare notes of what was cut. Returns (summary, the quoted messages kept, how many
    quoted messages went)."""
    if not summary or free <= 0:
        return summary, users, 0
    start = estimate_text(summary)
    parts = parse(summary, users)
    cut = 0

    def short() -> bool:
        return start - estimate_text(parts.render()) < free

    _shrink(parts, free, start, index_only=True)
    for t in [t for t in parts.users if not (humans.instructs(t) or humans.states_facts(t))]:
        if not short():
            break
        parts.users.remove(t)
        cut += 1
    if short() and parts.body:
        parts.body = None
    if short() and parts.facts:
        now = estimate_text(parts.render())
        _shrink(parts, free - (start - now), now, index_only=False)
    while short() and parts.users:
        parts.users.pop(0)
        cut += 1
    if short() and not parts.facts:
        parts.left_out = 0
    if short() and not parts.lines:
        parts.cut = 0
    text = parts.render()
    return (text or None), (parts.users if users is not None else None), cut


def user_texts(messages: Sequence[Message]) -> list[str]:
    """Every text the human wrote in `messages` (user-role text blocks), in order."""
    return [b.text for m in messages if m.role == "user" for b in m.content if isinstance(b, TextBlock) and b.text.strip()]
