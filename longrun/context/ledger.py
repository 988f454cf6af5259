"""The fact ledger: the summarized turns' facts, verbatim, one line each, latest value per subject.

Why it exists: a prose summary under a budget drops exact values (ports, paths, checksums, owners),
relations, short tool results, corrections and status lines first, and keeps filler. The ledger is
the durable record of those facts. It is built mechanically (`facts.py` finds the lines), never
by a model, and rendered outside the summarizer's text, like the results index and the human's
messages, so a model summarizer cannot drop or rewrite it.

    ## Fact ledger (...)
    - user: billing-svc listens on port 8443.
    - agent, final: T-14 is blocked on the DB credentials, not on review.
    - tool read_file `config/app.yaml`: timeout_ms: 3000
    - user ×14: Thanks, noted — CI run 4411 passed.
    - (9 lower-information facts left out for size; the transcript keeps them)

Rules, in the order they apply:
- a line that says it is unrelated, obsolete or to be ignored is not a fact;
- a later line with the same key (same subject words and names, values aside) replaces the
  earlier one: latest value wins, and near-identical repeats collapse into one line with a count;
- a correction ("actually", "not 8080", "changed from A to B", ...) replaces the earlier line it
  corrects (most shared names and words) and is marked `final`;
- a tool's line corrects no other line of the same output, nor restates its subject: a listing's or
  a file's lines are records side by side (a repeat with the same key still collapses);
- the ledger folds forward across compactions (earlier lines first, re-read with the same rules);
- over its budget, the lines that tell least per token go first, counted; the rest keep their
  conversation order.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

from longrun.context import facts, kinds, reword
from longrun.context.facts import Unit
from longrun.context.foldindex import Earlier
from longrun.context.index import STATE_TOOLS, is_short
from longrun.context.tokens import estimate_text
from longrun.context.transcript import FACTS_KEY, extra, is_cleared, result_text
from longrun.models.blocks import Message, TextBlock, ToolResultBlock, ToolUseBlock

LEDGER_SECTION = "## Fact ledger"
LEDGER_HEADER = LEDGER_SECTION + " (quoted verbatim; latest value per subject; final = corrected)"
WHERE_CHARS = 80
"""A tool line names its call by tool and key input, cut to this many characters."""

GROUPS = (("user", "### said by the user"), ("agent", "### said by the agent"), ("note", "### task notes"),
          ("tool", "### tool results"))
"""The ledger's subsections, one per source, each in conversation order: the source is said
once per group rather than on every line."""
_GROUP_OF = {title: source for source, title in GROUPS}
_LINE = re.compile(r"^- (?:\((final)?(?:, )?(?:×(\d+))?\) )?(?:`([^`]*)`: )?(.*)$")
_LEFT_OUT = re.compile(r"^- \((\d+) lower-information facts left out for size; the transcript keeps them\)$")
_QUOTE = str.maketrans({"`": "'", "\n": " "})


def left_out_note(n: int) -> str:
    return f"- ({n} lower-information facts left out for size; the transcript keeps them)"


class Entry:
    """A ledger line: its unit (analysed), whether it is a correction's final value, its count."""

    __slots__ = ("final", "gone", "rank", "replaced", "replaced_quotes", "row", "source_seq", "unit")

    def __init__(self, unit: Unit, final: bool = False, replaced: bool = False) -> None:
        self.unit = unit
        self.final = final
        self.replaced = replaced
        self.row: int | None = None
        """Its row in the run's fact store (`factstore`), once it has one."""
        self.source_seq = 0
        """The transcript entry it was read from."""
        self.rank: tuple[int, int] | None = None
        """Where the selection ranks it when not by its own kind (`kinds.rank`): a row that
        replaced a typed record or a rule ranks with it (`FactStore.entries`)."""
        self.gone: list[Entry] = []
        """The entries this one replaced when it was folded in."""
        self.replaced_quotes: set[str] = set()
        """The human messages quoted verbatim whose value this line replaced: if the line does not
        fit the budget, they must not be quoted either (`compact` unquotes them)."""
        """It replaced an earlier value: the ledger keeps it first, or the older value, still
        quoted verbatim elsewhere, would read as current."""

    def render(self) -> str:
        """`- [(final, ×N) ][`tool call`: ]text`; a tool line names its call only when the line
        names nothing itself (`{"status": "degraded"}` needs the probe it answers)."""
        u = self.unit
        marks = ", ".join(m for m in ("final" if self.final else "", f"×{u.count}" if u.count > 1 else "") if m)
        where = f"`{u.where}`: " if u.source == "tool" and u.where and not u.names else ""
        return f"- {f'({marks}) ' if marks else ''}{where}{u.text}"


def units_of(messages: Sequence[Message], hint_of: dict[str, str], skip_users: Iterable[str] = ()) -> list[Unit]:
    """The fact units of `messages`, in order.

    Args:
        hint_of: tool_use id -> "<tool> <key input>", how a tool line names its call.
        skip_users: user texts kept verbatim elsewhere in the summary: their units are marked
            `quoted` (folded, so they supersede what they correct, then not rendered)."""
    skip = set(skip_users)
    out: list[Unit] = []
    order = 0
    for m in messages:
        known: str | None = None  # its tool calls' inputs, joined when an agent unit first needs them
        for b in m.content:
            if isinstance(b, TextBlock) and b.text.strip():
                quoted = m.role == "user" and b.text in skip
                source = "user" if m.role == "user" else "agent"
                for text in facts.split_units(b.text):
                    order += 1
                    u = facts.analyse(text, source, order=order)
                    u.quoted = quoted
                    u.origin = b.text if quoted else ""
                    if source == "agent":
                        if known is None:
                            known = "\n".join(_strings(x.input) for x in m.content if isinstance(x, ToolUseBlock))
                        if _narration(u, known):
                            continue
                    out.append(u)
            elif isinstance(b, ToolResultBlock):
                lines = result_fact_lines(b)
                if not lines:
                    continue
                where = hint_of.get(b.tool_use_id, "tool").translate(_QUOTE)
                if where.partition(" ")[0] in STATE_TOOLS:
                    continue
                short = is_short(b)  # quoted whole on its index line: folded, so it supersedes, not rendered
                where = where if len(where) <= WHERE_CHARS else where[: WHERE_CHARS - 1] + "…"
                for text in lines:
                    order += 1
                    u = facts.analyse(text, "tool", where=where, order=order)
                    if u.names:
                        u.where = ""  # the line names its own subject: its key and render need no call
                    u.quoted = short
                    if u.is_fact:
                        out.append(u)
    return [u for u in out if u.is_fact and not facts.dismissed(u.text)]


MAX_QUOTED_RESULT_TOKENS = 1_000
"""Facts are quoted from tool results up to this size (a probe, a status, a config file); larger
ones (logs, file dumps) are in the results index, whole, behind read_artifact: quoting their
numbers would spend the ledger on noise."""


CODE_SHARE = 0.5
"""A result whose lines are mostly source code is not quoted (the index names the file)."""


def result_fact_lines(b: ToolResultBlock) -> list[str]:
    """The lines of a tool result the ledger may quote: a short or a quotable result's lines; for
    a result an earlier stage already cleared, the fact lines it kept when it cleared it
    (`transcript.FACTS_KEY`), so a result cleared by microcompact long before the summary that
    covers it still has its facts quoted."""
    if is_cleared(b):
        kept = extra(b, FACTS_KEY)
        return [str(x) for x in kept] if isinstance(kept, list) else []
    if not (is_short(b) or _quotable(b)):
        return []
    return facts.split_units(result_text(b), prose=False)


def facts_to_keep(b: ToolResultBlock) -> list[str]:
    """What a stage that clears `b` keeps of it for the ledger (the lines it would read its facts
    from, when it would quote it): stored with the placeholder in an internal key, never sent.
    Not analysed here: `units_of` analyses what it reads and keeps the facts, the same ones from
    these lines as from the result, and analysing them at stage 1 was most of its cost per
    request (issue 25: a cold analysis of every cleared result's lines, 42 of a call's 44 ms)."""
    if is_cleared(b) or not _quotable(b):
        return []
    return facts.split_units(result_text(b), prose=False)


def _quotable(b: ToolResultBlock) -> bool:
    """A result whose fact lines the ledger quotes: not a short one (its index line quotes it
    whole, beside its call), not a large one, not source code."""
    text = result_text(b)
    if is_short(b) or estimate_text(text) > MAX_QUOTED_RESULT_TOKENS:
        return False
    return facts.code_share(text.splitlines()) < CODE_SHARE


def note_units(notes: Sequence[str], already: Sequence[Entry] = ()) -> list[Unit]:
    """The task state's notes that its block no longer shows, as ledger units (`note:` lines),
    whole, those already in the ledger skipped. A note is the agent's own record: kept even
    without a concrete token."""
    have = {e.unit.text for e in already if e.unit.source == "note"}
    out = []
    for n in notes:
        text = " ".join(n.split())
        if text and text not in have:
            have.add(text)
            out.append(facts.analyse(text, "note"))
    return out


def _strings(value: object) -> str:
    if isinstance(value, dict):
        return "\n".join(_strings(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return "\n".join(_strings(v) for v in value)
    return str(value)


def _narration(u: Unit, known: str) -> bool:
    """An agent sentence whose concrete tokens all appear in its own tool calls ("Next I read
    src/x.py"): the results index already says it."""
    if not known or u.relation or u.status:
        return False
    return all(v in known for v in u.values) and all(n in known.lower() for n in u.names)


def parse(section: str | None) -> tuple[int, list[Entry]]:
    """(facts left out so far, entries) of a rendered ledger section, in its groups' order."""
    if not section:
        return 0, []
    left = 0
    out: list[Entry] = []
    source = "agent"
    for order, ln in enumerate(section.splitlines()):
        if ln in _GROUP_OF:
            source = _GROUP_OF[ln]
            continue
        m = _LEFT_OUT.match(ln)
        if m:
            left += int(m.group(1))
            continue
        m = _LINE.match(ln)
        if not m or not m.group(4):
            continue
        u = facts.analyse(m.group(4), source, where=m.group(3) or "", order=order - 1_000_000)
        u.count = int(m.group(2) or 1)
        out.append(Entry(u, final=bool(m.group(1))))
    return left, out


def fold(previous: Sequence[Entry], new: Iterable[Unit], created: list[Entry] | None = None,
         seq_of: dict[int, int] | None = None, index: Earlier | None = None) -> list[Entry]:
    """The ledger after `new` units, in conversation order, with the rules of the module
    docstring; units kept verbatim elsewhere (`quoted`) supersede what they correct and are then
    left out. Earlier lines are looked up by key, subjects, value and topic (`foldindex`), so a fold
    is linear in the lines, not quadratic.

    Args:
        created: when given, every entry made from `new` is appended to it, those a later unit
            of `new` replaced included (the fact store keeps them, superseded).
        seq_of: id(unit) -> the transcript entry it was read from, for the entries' `source_seq`.
        index: the earlier lines already indexed (`foldcache`, which keeps a store's index across
            compactions), used (and changed) instead of indexing `previous` again."""
    seen = index if index is not None else Earlier()
    if index is None:
        for e in previous:
            seen.add(e)
    entries = seen.entries
    for u in new:
        seq = (seq_of or {}).get(id(u), 0)
        if u.source == "note":  # the agent's own record: kept as written, never replaced by a guess
            e = Entry(u)
            e.source_seq = seq
            seen.add(e)
            if created is not None:
                created.append(e)
            continue
        gone: list[Entry] = []
        prior = seen.same_key(u)
        final = prior is not None and u.correction and _differs(u, entries[prior])
        if prior is None and (u.correction or seen.restates_value(u) or reword.old_terms(u)):
            matches = seen.corrected(u, seq)
            for other in matches[1:]:
                gone.append(entries[other])  # type: ignore[arg-type]
                entries[other] = None
            prior = matches[0] if matches else None
            final = prior is not None and (u.correction or bool(reword.old_terms(u)))
        if prior is None:
            prior = seen.same_subject(u, seq)
        if prior is None:
            prior = seen.reworded(u)
        if prior is None:
            prior = seen.updated(u)
        overridden = [i for i in seen.overridden(u) if i != prior]  # every choice it overrides goes
        final = final or bool(overridden)  # a choice replaced in other words: never quoted as current
        if prior is None and overridden:
            prior = overridden.pop(0)
        for other in overridden:
            gone.append(entries[other])  # type: ignore[arg-type]
            entries[other] = None
        old_entry = entries[prior] if prior is not None else None
        if old_entry is not None and prior is not None:
            if facts.template(old_entry.unit.text) == facts.template(u.text):
                u.count += old_entry.unit.count
            final = final or (old_entry.final and not u.correction)
            entries[prior] = None
            gone.append(old_entry)
        entry = Entry(u, final=final, replaced=old_entry is not None and _differs(u, old_entry))
        entry.gone = gone
        entry.source_seq = seq
        if created is not None:
            created.append(entry)
        for g in gone:
            entry.replaced_quotes |= g.replaced_quotes | ({g.unit.origin} if g.unit.quoted and g.unit.origin else set())
        seen.add(entry)
    return [e for e in entries if e is not None and not e.unit.quoted]


def _differs(u: Unit, e: Entry | None) -> bool:
    """The unit states a value (or path) the entry did not."""
    return e is not None and bool(facts.held_values(u) - facts.held_values(e.unit))


def entry_cost(e: Entry) -> int:
    return estimate_text(e.render()) + 1


def select(entries: list[Entry], budget: int, left_before: int = 0) -> tuple[int, list[Entry]]:
    """The entries that fit `budget` tokens (header and note included), by priority class first
    (`kinds.PRIORITY`: rules, decisions, values and relations, statuses, preferences); within a
    class, first those that replaced an earlier value and the task notes the state block no
    longer shows (the agent's own record, which it reads back here), then the most informative
    per token (lines of one template without a subject of their own, a series, share one line's
    worth); returned in conversation order; (facts left out in all, kept entries)."""
    header = estimate_text(LEDGER_HEADER) + 2 + 8 * len(GROUPS)
    costs = [entry_cost(e) for e in entries]
    if header + sum(costs) <= budget:
        return left_before, list(entries)
    note = estimate_text(left_out_note(left_before + len(entries))) + 1
    room = budget - header - note
    # near-identical lines without a subject of their own (only their values vary) share one's worth
    series = Counter(facts.template(e.unit.text) for e in entries if not facts.subjects(e.unit))
    worth = [facts.information(e.unit) / (1 if facts.subjects(e.unit) else series[facts.template(e.unit.text)]) / costs[i]
             for i, e in enumerate(entries)]
    first = [e.final or e.replaced or e.unit.source == "note" for e in entries]
    ranked = sorted(range(len(entries)), key=lambda i: (_rank(entries[i]), not first[i], -worth[i], -i))
    keep: set[int] = set()
    used = 0
    for i in ranked:
        if used + costs[i] <= room:
            keep.add(i)
            used += costs[i]
    kept = [e for i, e in enumerate(entries) if i in keep]
    return left_before + len(entries) - len(kept), kept


def _rank(e: Entry) -> tuple[int, int]:
    own = kinds.rank(e.unit.kind, e.unit.typed)
    return own if e.rank is None else min(own, e.rank)


def render(left_out: int, entries: Sequence[Entry]) -> str:
    if not entries and not left_out:
        return ""
    out = [LEDGER_HEADER]
    for source, title in GROUPS:
        lines = [e.render() for e in entries if e.unit.source == source]
        if lines:
            out += [title, *lines]
    if left_out:
        out.append(left_out_note(left_out))
    return "\n".join(out)


def cost(left_out: int, entries: Sequence[Entry]) -> int:
    text = render(left_out, entries)
    return estimate_text(text) if text else 0
