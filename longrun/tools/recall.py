"""`recall`: finds a fact the compacted context left out, in the run's fact store, else its transcript.

A compaction shows only what fits its budget of the store's current facts (issue 25); the rest is
kept, not lost, and this tool is how the model gets it back, as `read_artifact` brings back a
cleared tool result. It answers each matching row with its value, the transcript entry it came
from, who said it and what it replaced (or which row replaced it): current rows first, then the
superseded ones, marked, so an old value never reads as the current one.

When no row matches, it searches the text of the newest transcript entries (bounded: at most
`SCAN_ENTRIES` entries, newest first) and says that it did. Output is capped at `MAX_OUTPUT_BYTES`;
the activity redacts it like every tool's output, and audits the call (tool_ran).

Tests: tests/test_tools_recall.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from longrun.errors import ToolError
from longrun.models.blocks import TextBlock, ToolResultBlock, ToolUseBlock
from longrun.models.context import FactRow
from longrun.store.records import TranscriptRecord
from longrun.tools._text import cap_bytes
from longrun.tools.base import Tool, ToolContext, ToolOutcome

SCAN_ENTRIES = 200
"""Transcript entries the fallback reads at most, newest first."""
MAX_TRANSCRIPT_HITS = 10
SNIPPET_CHARS = 300
MAX_OUTPUT_BYTES = 16_000
KINDS = ["rule", "decision", "value", "status", "preference"]


class MemoryStore(Protocol):
    def facts(self, run_id: str) -> list[FactRow]: ...

    def last_transcript_entry(self, run_id: str) -> TranscriptRecord | None: ...

    def transcript(self, run_id: str, *, after_seq: int = 0, through_seq: int | None = None) -> list[TranscriptRecord]: ...


@dataclass(frozen=True)
class RunMemory:
    """One run's fact store and transcript, as `recall` reads them (`ToolContext.memory`)."""

    store: MemoryStore
    run_id: str

    def facts(self) -> list[FactRow]:
        return self.store.facts(self.run_id)

    def recent_entries(self, limit: int) -> list[TranscriptRecord]:
        last = self.store.last_transcript_entry(self.run_id)
        if last is None:
            return []
        return self.store.transcript(self.run_id, after_seq=max(0, last.seq - limit))


def _entry_text(entry: TranscriptRecord) -> str:
    parts: list[str] = []
    for b in entry.message.content:
        if isinstance(b, TextBlock):
            parts.append(b.text)
        elif isinstance(b, ToolUseBlock):
            parts.append(f"{b.name} {json.dumps(b.input, sort_keys=True)}")
        elif isinstance(b, ToolResultBlock):
            if isinstance(b.content, str):
                parts.append(b.content)
            else:
                parts.extend(str(c.get("text", "")) for c in b.content if isinstance(c, dict))
    return "\n".join(p for p in parts if p)


def _snippet(text: str, words: list[str]) -> str:
    low = text.lower()
    at = min((i for w in words if (i := low.find(w)) >= 0), default=0)
    start = max(0, at - SNIPPET_CHARS // 3)
    body = " ".join(text[start:start + SNIPPET_CHARS].split())
    return ("..." if start else "") + body + ("..." if start + SNIPPET_CHARS < len(text) else "")


def _search_transcript(entries: list[TranscriptRecord], query: str) -> list[str]:
    words = [w.lower() for w in query.split() if w]
    hits = []
    for e in reversed(entries):
        text = _entry_text(e)
        if words and all(w in text.lower() for w in words):
            hits.append(f"[transcript seq {e.seq}, {e.role}] {_snippet(text, words)}")
            if len(hits) >= MAX_TRANSCRIPT_HITS:
                break
    return hits


def _recall(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    query, kind = args["query"].strip(), args.get("kind")
    if not query:
        raise ToolError("query is empty: give a subject or words the fact holds, e.g. {\"query\": \"database port\"}")
    if ctx.memory is None:
        raise ToolError("no fact store is available to this run; search the workspace with grep instead")
    # the context package (the whole compaction pipeline) is imported when the tool runs, in the
    # worker: every holder of the tool registry (`longrun approve` validates an edit's arguments
    # against it) would otherwise load it (tests/test_import_cost.py)
    from longrun.context import FactStore, recall

    found = recall(FactStore(ctx.memory.facts()), query, kind=kind)
    if found.found:
        lines = [found.render()]
    else:
        hits = _search_transcript(ctx.memory.recent_entries(SCAN_ENTRIES), query)
        lines = [f"no fact in the store matches {query!r}" + (f" (kind {kind})" if kind else "")
                 + f"; searched the text of the newest {SCAN_ENTRIES} transcript entries instead: "
                 + (f"{len(hits)} match(es), newest first" if hits else "nothing matches either")]
        lines += hits
    body, cut = cap_bytes("\n".join(lines).encode("utf-8"), MAX_OUTPUT_BYTES)
    out = body.decode("utf-8", errors="replace")
    return ToolOutcome(text=out + f"\n[truncated at {MAX_OUTPUT_BYTES} bytes; narrow the query]" if cut else out)


RECALL = Tool(
    name="recall",
    description=(
        "Find a fact of this run the summary left out: query is words the fact holds (all must match), kind "
        "narrows it. Answers with the current value, its transcript seq and what it superseded, else with recent "
        "transcript text."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 500,
                      "description": "words the fact holds, e.g. 'database port'"},
            "kind": {"type": "string", "enum": KINDS},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    kind="read",
    run=_recall,
)
