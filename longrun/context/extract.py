"""What a compaction reads into the fact store: the transcript entries after the store's last one,
up to what the compaction summarizes, and the task notes the state block no longer shows.

Incremental and deterministic: an entry is read once (`FactStore.through_seq` says where the
last compaction stopped), from the transcript itself, never from a projection, so the store does
not depend on what any earlier projection kept. A run whose store is empty (before issue 25) is
read from its first entry.
"""

from __future__ import annotations

from collections.abc import Sequence

from longrun.context import humans, index, ledger
from longrun.context.facts import Unit
from longrun.context.factstore import FactStore
from longrun.models.blocks import ToolResultBlock, ToolUseBlock
from longrun.models.context import TranscriptItem
from longrun.models.state import TaskState


def view_seqs(ordered: Sequence[TranscriptItem], cover_prev: int, kept: int) -> list[int]:
    """The transcript seq of each message of the view: a projection's messages are the last
    `kept` entries up to its cover (a compaction only ever drops a prefix), then the entries
    after it."""
    before = [it.seq for it in ordered if it.seq <= cover_prev][-kept:] if kept else []
    before = [0] * (kept - len(before)) + before
    return before + [it.seq for it in ordered if it.seq > cover_prev]


def units_after(store: FactStore, items: Sequence[TranscriptItem], through: int, state: TaskState,
             hidden_notes: Sequence[str] = ()) -> list[tuple[Unit, int]]:
    """The units of the transcript entries after the store's last one up to `through` (each with
    its seq), and of the task notes the state block no longer shows that the store lacks."""
    have = store.notes()
    out: list[tuple[Unit, int]] = [(u, 0) for u in ledger.note_units([n for n in hidden_notes if " ".join(n.split()) not in have])]
    start = store.through_seq
    fresh = [it for it in items if start < it.seq <= through]
    if fresh:
        hint_of = _hints(items, through, fresh)
        for it in fresh:
            out += [(u, it.seq) for u in ledger.units_of([it.message], hint_of)]
    return [(u, s) for u, s in out if not humans.in_state(u.text, state)]


def _hints(items: Sequence[TranscriptItem], through: int, fresh: Sequence[TranscriptItem]) -> dict[str, str]:
    """tool_use id -> "<tool> <key input>" for the results in `fresh`: the latest use of each id
    up to `through` (what `tool_uses_by_id` over those entries gives), found from the end, so a
    compaction does not read every call of the transcript again (issue 25's cost goal)."""
    want = {b.tool_use_id for it in fresh for b in it.message.content if isinstance(b, ToolResultBlock)}
    out: dict[str, str] = {}
    for it in reversed(items):
        if not want:
            break
        if it.seq > through:
            continue
        for b in reversed(it.message.content):
            if isinstance(b, ToolUseBlock) and b.id in want:
                want.discard(b.id)
                out[b.id] = f"{b.name} {index.input_hint(b.input)}"
    return out
