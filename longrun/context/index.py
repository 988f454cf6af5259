"""The results index: one short line per tool result that left the conversation (summarized, or
dropped by hard enforcement), kept in the summary message outside the summarizer's capped body.

    - sha256:<artifact> <tool> <input hint>

The hint is the call's key input, whole: its command (argv joined), its search pattern and path,
or its file path; other inputs as a short JSON preview. A hint that spans lines is JSON-quoted so
that every entry stays one line. The index is mechanical (never delegated to a model summarizer),
folds forward from one compaction to the next byte for byte (new entries are appended, so the
lines of earlier compactions keep their place and their bytes), and is cut oldest-first only when
even it does not fit, with a counted note: nothing leaves it silently.

It is bounded (`bound`, issue 26): over INDEX_SHARE of the budget, its oldest lines fold into one
line per tool that names how many calls it stands for and the paths (key inputs) they touched,

    - (earlier) <tool> x<calls>: <hint>; <hint>; ...

so a run's index costs what its last stretch of work added, not what the whole run did, and the
compactions stay spaced by what a turn adds. What a folded line stands for is still one `recall`
away (the fact store, then the transcript) and every result is still stored as an artifact.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from longrun.context import transcript
from longrun.context.tokens import estimate_text
from longrun.context.transcript import TOOL_KEY, artifact_sha, extra, input_preview, is_cleared, result_text
from longrun.models.blocks import Message, ToolResultBlock, ToolUseBlock

INDEX_SECTION = "## Earlier tool results"
INDEX_HEADER = (INDEX_SECTION + " (oldest first; a short output is quoted after =>, any other comes back "
                "with read_artifact {\"sha256\": \"<the hex after sha256:>\"})")
REF_HEX = transcript.REF_HEX
"""Hex digits of the artifact hash written in an index line: the shortest prefix read_artifact
resolves (`Store.resolve_artifact_prefix`), about 30 tokens a line fewer than the full hash.
Readers without a store (the offline `longrun compact`, the benchmarks) resolve a prefix against
the results they hold (`resolve_prefixes`)."""
MAX_HINT_CHARS = 4_000
"""A command or path longer than this is in effect file content: only its head is kept."""

_LINE = re.compile(r"^- sha256:([0-9a-f]{12,64}) (?!= )(\S+)", re.M)
_INLINE = re.compile(r"^- (?!sha256:)(?!\()\S+ .*=> ")
QUOTE_SEP = " ⏎ "
"""Joins the lines of a short result quoted on its index line."""
_FOLDED = re.compile(r"^- \(earlier\) (\S+) x(\d+): (.*)$")
_CUT_NOTE = re.compile(r"^- \((\d+) older entries cut to fit the window; their artifacts are still stored\)$", re.M)
_CMD_KEYS = ("command", "cmd", "argv")
_SEARCH_KEYS = ("pattern", "query")
_PATH_KEYS = ("file_path", "path", "notebook_path", "filename", "file")


def cut_note(n: int) -> str:
    return f"- ({n} older entries cut to fit the window; their artifacts are still stored)"


def _whole(value: str) -> str:
    if len(value) > MAX_HINT_CHARS:
        value = value[:MAX_HINT_CHARS] + f" … [{len(value) - MAX_HINT_CHARS} more chars]"
    if "\n" in value or "\r" in value or value != value.strip():
        return json.dumps(value, ensure_ascii=False)
    return value


def input_hint(tool_input: dict[str, Any]) -> str:
    """The key input of a call, whole (commands are never cut mid-way)."""
    for k in _CMD_KEYS:
        v = tool_input.get(k)
        if isinstance(v, list):
            v = " ".join(str(x) for x in v)
        if isinstance(v, str) and v:
            return _whole(v)
    for k in _SEARCH_KEYS:
        v = tool_input.get(k)
        if isinstance(v, str) and v:
            where = next((tool_input[p] for p in _PATH_KEYS if isinstance(tool_input.get(p), str) and tool_input[p]), "")
            return _whole(v) + (f" in {_whole(where)}" if where else "")
    for k in _PATH_KEYS:
        v = tool_input.get(k)
        if isinstance(v, str) and v:
            return _whole(v)
    return input_preview(tool_input, 120) if tool_input else ""


def entry(sha: str, tool: str, hint: str) -> str:
    return f"- sha256:{sha[:REF_HEX]} {tool}" + (f" {hint}" if hint else "")


STATE_TOOLS = frozenset(("record_decision", "set_next_action", "write_note", "complete_stage"))
"""longrun's state tools (`longrun/tools/state_tools.py`, checked by a test): what they record
is in the task state itself (decisions, notes, step, next action) and their results only
acknowledge it, so neither the index nor the ledger repeats them."""
SHORT_RESULT_TOKENS = 60
"""A result this short is quoted whole on its index line instead of referenced: its reference
would be about as long as the result itself."""


def is_short(b: ToolResultBlock) -> bool:
    """A result its index line quotes whole (non-empty, at most SHORT_RESULT_TOKENS)."""
    text = result_text(b)
    return bool(text.strip()) and not is_cleared(b) and estimate_text(text) <= SHORT_RESULT_TOKENS


def entries(messages: Sequence[Message], uses: dict[str, ToolUseBlock] | None = None) -> list[str]:
    """Index lines for every tool result in `messages`, in order. `uses`: tool uses by id from
    outside `messages` (a result's call is normally right before it)."""
    found: dict[str, ToolUseBlock] = dict(uses or {})
    out: list[str] = []
    for m in messages:
        for b in m.content:
            if isinstance(b, ToolUseBlock):
                found[b.id] = b
            elif isinstance(b, ToolResultBlock) and not _state_tool(b, found.get(b.tool_use_id)):
                out.append(result_entry(b, found.get(b.tool_use_id)))
    return out


def _state_tool(b: ToolResultBlock, use: ToolUseBlock | None) -> bool:
    return str(extra(b, TOOL_KEY) or (use.name if use else "")) in STATE_TOOLS


def result_entry(b: ToolResultBlock, use: ToolUseBlock | None) -> str:
    """`- sha256:<prefix> <tool> <key input>`, or for a short result `- <tool> <key input> =>
    <the result>`, its lines joined by QUOTE_SEP: the call and what it answered, on one line."""
    tool = str(extra(b, TOOL_KEY) or (use.name if use else "tool"))
    hint = input_hint(use.input) if use else ""
    if is_short(b):
        quoted = QUOTE_SEP.join(" ".join(ln.split()) for ln in result_text(b).splitlines() if ln.strip())
        return f"- {tool}" + (f" {hint}" if hint else "") + f" => {quoted}"
    return entry(artifact_sha(b), tool, hint)


def message_entry_costs(messages: Sequence[Message]) -> list[int]:
    """Tokens the index lines of each message's results would take (0 for most messages)."""
    uses: dict[str, ToolUseBlock] = {}
    costs: list[int] = []
    for m in messages:
        c = 0
        for b in m.content:
            if isinstance(b, ToolUseBlock):
                uses[b.id] = b
            elif isinstance(b, ToolResultBlock) and not _state_tool(b, uses.get(b.tool_use_id)):
                c += estimate_text(result_entry(b, uses.get(b.tool_use_id))) + 1
        costs.append(c)
    return costs


def parse(section: str | None) -> tuple[int, list[str]]:
    """(entries cut so far, entry lines) of an index section (header included or not)."""
    if not section:
        return 0, []
    cut = 0
    lines: list[str] = []
    for ln in section.splitlines():
        m = _CUT_NOTE.match(ln)
        if m:
            cut += int(m.group(1))
        elif _LINE.match(ln) or _INLINE.match(ln) or _FOLDED.match(ln):
            lines.append(ln)
    return cut, lines


def fold(previous: Sequence[str], new: Iterable[str]) -> list[str]:
    """The previous lines, then the new ones not already there (same artifact, tool and hint)."""
    seen = set(previous)
    out = list(previous)
    for ln in new:
        if ln not in seen:
            seen.add(ln)
            out.append(ln)
    return out


def render(cut: int, lines: Sequence[str]) -> str:
    if not lines and not cut:
        return ""
    return "\n".join([INDEX_HEADER, *([cut_note(cut)] if cut else []), *lines])


def cost(cut: int, lines: Sequence[str]) -> int:
    text = render(cut, lines)
    return estimate_text(text) if text else 0


def shrink(cut: int, lines: list[str], free: int) -> tuple[int, list[str]]:
    """Cut the oldest lines until at least `free` tokens are freed (counted in the note)."""
    if free <= 0 or not lines:
        return cut, lines
    freed = 0
    k = 0
    while k < len(lines) and freed < free:
        freed += estimate_text(lines[k]) + 1
        k += 1
    return cut + k, lines[k:]


INDEX_SHARE = 0.1
"""The most of the request budget the index takes: past it, its oldest lines fold (`bound`)."""
INLINE_FACTOR = 4
"""Lines that quote a short output (facts) fold only past this many times the cap (`bound`)."""
FOLD_HINT_CHARS = 320
"""The key inputs a folded line lists, newest first, at most this many characters."""


def cap(limit_tokens: int) -> int:
    """The index's cap for a request budget of `limit_tokens` (estimated tokens)."""
    return max(200, int(limit_tokens * INDEX_SHARE))


def _split(line: str) -> tuple[str, str, int, list[str]]:
    """(tool, key input, calls, hints already folded) of an index line."""
    m = _FOLDED.match(line)
    if m:
        hints = [h for h in m.group(3).removesuffix(" …").split("; ") if h]
        return m.group(1), "", int(m.group(2)), hints
    body = line[2:]
    if body.startswith("sha256:"):
        body = body.split(" ", 1)[1] if " " in body else ""
    elif " => " in body:
        body = body.split(" => ", 1)[0]
    tool, _, hint = body.partition(" ")
    return tool, hint, 1, []


def _folded_line(tool: str, calls: int, hints: list[str]) -> str:
    shown: list[str] = []
    used = 0
    for h in hints:
        h = " ".join(h.split())
        if used + len(h) + 2 > FOLD_HINT_CHARS:
            return f"- (earlier) {tool} x{calls}: " + "; ".join(shown) + " …"
        shown.append(h)
        used += len(h) + 2
    return f"- (earlier) {tool} x{calls}: " + "; ".join(shown)


def bound(cut: int, lines: list[str], max_tokens: int) -> tuple[int, list[str]]:
    """The index within `max_tokens`: when over it, its oldest lines fold into one line per tool
    (calls counted, key inputs listed newest first, each once) until it is back under the cap;
    when even the folded lines are over the cap, the oldest of them are cut, counted in the note.

    It folds only as far as the cap, not lower: once there, every compaction folds about what it
    added, and the index costs the same at each one. A compaction lands at what it keeps (the
    summary among it), so an index that folded to half its cap and grew back made the room before
    the next trigger swing by half the cap, and a stretch of turns compacted more or less often
    by where it fell in that cycle (issue 26: 24 compactions in the long-run benchmark's last 100
    turns against 23 in turns 101-200). Folding lower saved no cache rewrite: the body comes
    before the index in the summary message, and a compaction rewrites the summary anyway.

    A line that quotes a short output (`=>`: an exit code, a value a command printed) is a fact,
    which a folded line would lose: such lines fold only past INLINE_FACTOR times the cap (and then
    oldest first, back under that), after every line that only names an artifact has folded.
    A long run's results are mostly artifacts, so its index stays near the cap; a run of short
    answers keeps them (issue 25's tool-history questions)."""
    if cost(cut, lines) <= max_tokens:
        return cut, lines
    plain = [ln for ln in lines if not _FOLDED.match(ln)]
    tools: dict[str, tuple[int, list[str]]] = {}
    for ln in lines:
        if _FOLDED.match(ln):
            tool, _, calls, hints = _split(ln)
            n, had = tools.get(tool, (0, []))
            tools[tool] = (n + calls, [*had, *(h for h in hints if h not in had)])

    def render_folded() -> list[str]:
        return [_folded_line(t, n, h) for t, (n, h) in tools.items()]

    def lines_cost(ls: list[str]) -> int:
        return sum(estimate_text(ln) + 1 for ln in ls)

    head = cost(cut + 1, [])  # the header and a cut note
    rest = lines_cost(plain)  # of the plain lines not folded
    gone: set[int] = set()

    def fold_until(indexes: list[int], goal: int) -> None:
        nonlocal rest
        for i in indexes:
            if head + lines_cost(render_folded()) + rest <= goal:
                return
            tool, hint, calls, _ = _split(plain[i])
            n, had = tools.get(tool, (0, []))
            tools[tool] = (n + calls, ([hint] if hint else []) + [h for h in had if h != hint])
            rest -= estimate_text(plain[i]) + 1
            gone.add(i)

    inline = [i for i, ln in enumerate(plain) if _INLINE.match(ln)]
    fold_until([i for i in range(len(plain)) if i not in set(inline)], max_tokens)
    ceiling = max_tokens * INLINE_FACTOR if inline else max_tokens
    if head + lines_cost(render_folded()) + rest > ceiling:
        fold_until(inline, ceiling)
    kept = [ln for i, ln in enumerate(plain) if i not in gone]
    folded = render_folded()
    while folded and head + lines_cost(folded) + rest > ceiling:
        m = _FOLDED.match(folded[0])
        cut += int(m.group(2)) if m else 1
        folded = folded[1:]
    return cut, folded + kept


def references(section: str | None) -> list[dict[str, str]]:
    """The artifacts an index names: sha256 (or its prefix) and tool."""
    return [{"sha256": m.group(1), "tool": m.group(2), "stage": "summarized"} for m in _LINE.finditer(section or "")]
