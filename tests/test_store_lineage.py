"""A fork's transcript by reference (`run_lineage`, migration 0013), on real PostgreSQL: every
transcript read of a fork (a range, the tail, the newest entry, a turn's and a call's head) follows
the lineage to its parents' entries through each fork point, never past it; the fork's own entries
continue the numbering and the chain; `verify_chain` checks the whole lineage, so tampering with a
parent's entry before the fork point breaks the fork's verification; the lineage row is append-only."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DatabaseError

from longrun.models import Message, RunSpec
from longrun.store import Store
from longrun.store.lineage import ForkPoint


def texts(store: Store, run_id: str, **kw: int) -> list[str]:
    return [e.message.content[0].text for e in store.transcript(run_id, **kw)]  # type: ignore[union-attr]


def say(store: Store, run_id: str, words: str, turn: int = 1) -> int:
    return store.append_transcript(run_id, Message.user_text(words), token_estimate=5, turn=turn)


def fork(store: Store, parent: str, child: str, version: int, through: int) -> None:
    state = store.state_history(parent)[version - 1].state
    store.create_fork(child, store.get_run(parent).spec, state,
                      ForkPoint(parent_run_id=parent, version=version, through_seq=through, commit=None,
                                projection_version=None), actor="tester")


def test_a_fork_reads_its_parents_entries_through_the_fork_point_and_verifies_along_the_lineage(store: Store) -> None:
    store.create_run("p", RunSpec(objective="o", workspace="/tmp"), opening=Message.user_text("opening"))
    for i in range(2, 6):
        say(store, "p", f"p{i}")
    fork(store, "p", "f", 1, 3)
    assert say(store, "f", "f4") == 4, "the fork's own entries are numbered after the fork point"
    say(store, "f", "f5")
    say(store, "p", "p6")  # the parent goes on: the fork never sees it
    assert texts(store, "f") == ["opening", "p2", "p3", "f4", "f5"]
    assert texts(store, "f", after_seq=2, through_seq=4) == ["p3", "f4"]
    assert [e.seq for e in store.transcript_tail("f", tokens=10)] == [3, 4, 5]
    last = store.last_transcript_entry("f")
    assert last is not None and last.seq == 5
    assert store.load_turn_head("f").last_entry == (5, "user", 1)
    _state, entry = store.load_call_head("f", 2)
    assert entry is not None and entry.message.content[0].text == "p2"  # type: ignore[union-attr]

    fork(store, "f", "g", 1, 4)  # a fork of the fork, after the fork's first own entry
    say(store, "g", "g5")
    fork(store, "f", "h", 1, 2)  # one before the fork's own fork point: the grandparent's entries only
    say(store, "h", "h3")
    assert texts(store, "g") == ["opening", "p2", "p3", "f4", "g5"]
    assert texts(store, "h") == ["opening", "p2", "h3"]
    assert texts(store, "p") == ["opening", "p2", "p3", "p4", "p5", "p6"], "the parent is unchanged"
    for run in ("p", "f", "g", "h"):
        assert store.verify_chain(run).ok, store.verify_chain(run)
    # the transcript is referenced, not copied: the fork holds its own entries only
    with store.engine.connect() as conn:
        own = conn.execute(text("SELECT seq FROM transcript_entries WHERE run_id = 'g' ORDER BY seq")).scalars().all()
    assert own == [5]
    assert [f.run_id for f in store.forks("f")] == ["g", "h"] and store.lineage("g").parent_run_id == "f"  # type: ignore[union-attr]

    with store.engine.begin() as conn:  # an attacker edits the parent's entry 2, which every fork reads
        conn.execute(text("ALTER TABLE transcript_entries DISABLE TRIGGER transcript_entries_append_only"))
        conn.execute(text("""UPDATE transcript_entries SET content = '{"role": "user", "content": "edited"}'
                             WHERE run_id = 'p' AND seq = 2"""))
        conn.execute(text("ALTER TABLE transcript_entries ENABLE TRIGGER transcript_entries_append_only"))
    for run in ("p", "f", "g", "h"):
        verdict = store.verify_chain(run)
        assert not verdict.ok and verdict.table == "transcript_entries" and verdict.row == 2, (run, verdict)

    with pytest.raises(DatabaseError, match="run_lineage is append-only"):
        with store.engine.begin() as conn:
            conn.execute(text("UPDATE run_lineage SET parent_version = 2 WHERE run_id = 'f'"))


def test_runs_tree_puts_forks_and_subagents_under_their_parents(store: Store) -> None:
    from longrun.cli.commands.runs_tree import tree_lines

    store.create_run("root", RunSpec(objective="review", workspace="/tmp"), opening=Message.user_text("go"))
    store.create_run("root-sub", RunSpec(objective="Subagent brief: look", workspace="/tmp", read_only=True),
                     parent_run_id="root")
    fork(store, "root", "root-fork", 1, 1)
    fork(store, "root-fork", "root-fork-fork", 1, 1)
    lines = tree_lines(store, store.list_runs(limit=50))
    at = {run: next(i for i, line in enumerate(lines) if line.lstrip(" │├└─").startswith(run + " "))
          for run in ("root", "root-sub", "root-fork", "root-fork-fork")}
    assert lines[at["root"]].startswith("root ")
    assert lines[at["root-sub"]].startswith("├─ root-sub ") and lines[at["root-sub"]].endswith("(subagent)")
    assert lines[at["root-fork"]].startswith("└─ root-fork ") and lines[at["root-fork"]].endswith("(fork at v1)")
    assert lines[at["root-fork-fork"]].startswith("   └─ root-fork-fork ")
    # a child listed without its parent names the parent on its line
    alone = tree_lines(store, [r for r in store.list_runs(limit=50) if r.run_id == "root-fork-fork"])
    assert alone == [next(line for line in alone)] and alone[0].endswith("(fork at v1 of root-fork)")
