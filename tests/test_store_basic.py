"""The repository's ordinary behaviour on real PostgreSQL: runs, state, transcript, artifacts,
projections, audit, calibration."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from longrun.errors import RunNotFoundError, StaleStateError, StoreError
from longrun.models import (
    CompactionReport,
    Decision,
    Message,
    NextAction,
    Projection,
    RunSpec,
    TaskState,
    TextBlock,
    ToolUseBlock,
    Usage,
    sha256_hex,
    utcnow,
)
from longrun.models.audit import GateVerdict, RunStarted, ToolRan
from longrun.store import StaleProjectionError, Store


def _spec(**kw: object) -> RunSpec:
    base: dict[str, object] = {
        "objective": "review the payment module",
        "constraints": ["never push to main", "ask before deleting files"],
        "workspace": "/tmp/ws",
        "approvers": ["alice"],
    }
    base.update(kw)
    return RunSpec.model_validate(base)


def _count(store: Store, table: str, run_id: str | None = None) -> int:
    with store.engine.connect() as conn:
        if run_id is None:
            return conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one()
        return conn.execute(text(f"SELECT count(*) FROM {table} WHERE run_id = :r"), {"r": run_id}).scalar_one()


def test_create_run_writes_run_head_version_and_audit(store: Store) -> None:
    state = store.create_run("run-1", _spec())

    assert state.state_version == 1
    assert state.objective == "review the payment module"
    assert state.constraints == ["never push to main", "ask before deleting files"]
    assert store.load_state("run-1") == state

    run = store.get_run("run-1")
    assert (run.run_id, run.status, run.model, run.parent_run_id) == ("run-1", "running", "scripted", None)
    assert run.spec == _spec()
    assert store.load_spec("run-1") == _spec()

    history = store.state_history("run-1")
    assert [(h.version, h.actor, h.reason) for h in history] == [(1, "operator", "run created")]
    assert history[0].state == state

    events = store.audit("run-1")
    assert [e.kind for e in events] == ["run_started"]
    assert isinstance(events[0].event, RunStarted)
    assert events[0].event.constraints == ["never push to main", "ask before deleting files"]
    assert store.verify_chain("run-1").ok


def test_duplicate_run_id_is_refused_and_writes_nothing(store: Store) -> None:
    store.create_run("dup", _spec())
    with pytest.raises(StoreError, match="run 'dup' already exists"):
        store.create_run("dup", _spec(objective="something else"))
    assert _count(store, "runs") == 1
    assert _count(store, "task_state_versions", "dup") == 1
    assert store.load_state("dup").objective == "review the payment module"


def test_child_runs_and_listing(store: Store) -> None:
    store.create_run("parent", _spec())
    store.create_run("child-a", _spec(), parent_run_id="parent")
    store.create_run("child-b", _spec(), parent_run_id="parent")
    with pytest.raises(RunNotFoundError, match="nope"):
        store.create_run("orphan", _spec(), parent_run_id="nope")

    assert {r.run_id for r in store.list_runs()} == {"parent", "child-a", "child-b"}
    assert {r.run_id for r in store.list_runs(parent_run_id="parent")} == {"child-a", "child-b"}
    assert len(store.list_runs(limit=1)) == 1


def test_run_status_and_calibration(store: Store) -> None:
    store.create_run("r", _spec())
    store.set_run_status("r", "paused", "operator asked")
    run = store.get_run("r")
    assert (run.status, run.reason) == ("paused", "operator asked")
    assert run.updated_at >= run.created_at
    with pytest.raises(StoreError, match="status: 'sleeping' is not one of running"):
        store.set_run_status("r", "sleeping")
    with pytest.raises(RunNotFoundError):
        store.set_run_status("missing", "paused")

    assert store.get_calibration("r") == {}
    store.set_calibration("r", {"ratio": 1.17, "samples": 4})
    assert store.get_calibration("r") == {"ratio": 1.17, "samples": 4}


def test_unknown_run_raises_run_not_found(store: Store) -> None:
    for call in (
        lambda: store.load_state("ghost"),
        lambda: store.get_run("ghost"),
        lambda: store.transcript("ghost"),
        lambda: store.audit("ghost"),
        lambda: store.verify_chain("ghost"),
        lambda: store.append_transcript("ghost", Message.user_text("x"), token_estimate=1),
        lambda: store.append_audit("ghost", ToolRan(tool="t", call_id="c", is_error=False)),
    ):
        with pytest.raises(RunNotFoundError, match="unknown run id 'ghost'"):
            call()


def test_compare_and_set_moves_head_and_records_history(store: Store) -> None:
    s1 = store.create_run("r", _spec())
    draft = s1.model_copy(deep=True)
    draft.next_action = NextAction.edit
    draft.decisions.append(Decision(summary="fix rounding", reason="tests fail", at=utcnow()))
    draft.state_version = 99  # ignored: the store sets the version

    assert store.compare_and_set("r", 1, draft, actor="agent", reason="decided") == 2

    head = store.load_state("r")
    assert head.state_version == 2
    assert head.next_action is NextAction.edit
    assert head.updated_at > s1.updated_at
    assert [d.summary for d in head.decisions] == ["fix rounding"]

    with pytest.raises(StaleStateError, match="expected state_version 1, but the head is 2") as info:
        store.compare_and_set("r", 1, draft, actor="agent", reason="again")
    assert (info.value.expected, info.value.actual) == (1, 2)

    history = store.state_history("r")
    assert [(h.version, h.actor, h.reason) for h in history] == [(1, "operator", "run created"), (2, "agent", "decided")]
    assert history[1].prev_hash == history[0].hash
    assert history[1].state == head


def test_update_state_applies_a_mutation(store: Store) -> None:
    store.create_run("r", _spec())

    def add_note(s: TaskState) -> TaskState:
        s.notes.append("looked at payments.py")
        return s

    new = store.update_state("r", 1, add_note, actor="agent", reason="note")
    assert (new.state_version, new.notes) == (2, ["looked at payments.py"])
    assert store.load_state("r") == new

    # mutating in place and returning None works too
    newer = store.update_state("r", 2, lambda s: s.notes.append("second"), actor="agent", reason="note")
    assert newer.notes == ["looked at payments.py", "second"]
    with pytest.raises(StaleStateError):
        store.update_state("r", 2, add_note, actor="agent", reason="late")
    assert store.load_state("r").state_version == 3


def test_transcript_round_trip_keeps_unknown_block_fields(store: Store) -> None:
    store.create_run("r", _spec())
    m1 = Message.user_text("review please")
    m2 = Message.model_validate(
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig-abc"},
                {"type": "text", "text": "ok", "citations": [{"url": "https://x"}]},
                {"type": "tool_use", "id": "tu1", "name": "read_file", "input": {"path": "a.py"}},
            ],
        }
    )
    assert store.append_transcript("r", m1, token_estimate=5, turn=0) == 1
    assert store.append_transcript("r", m2, token_estimate=42, usage=Usage(input_tokens=100, output_tokens=7), turn=1) == 2
    assert store.append_transcript("r", Message.user_text("third"), token_estimate=2) == 3

    entries = store.transcript("r")
    assert [e.seq for e in entries] == [1, 2, 3]
    assert entries[0].message == m1 and entries[0].usage is None and entries[0].turn == 0
    assert entries[1].message == m2
    assert entries[1].usage == Usage(input_tokens=100, output_tokens=7)
    text_block = entries[1].message.content[1]
    assert isinstance(text_block, TextBlock)
    assert text_block.model_dump()["citations"] == [{"url": "https://x"}]
    assert isinstance(entries[1].message.content[2], ToolUseBlock)
    assert [e.seq for e in store.transcript("r", after_seq=1)] == [2, 3]
    assert [e.seq for e in store.transcript("r", after_seq=1, through_seq=2)] == [2]


def test_artifacts_are_content_addressed_and_stored_once(store: Store) -> None:
    data = b"line\n" * 1000
    digest = store.put_artifact(data, "text/plain")
    assert digest == sha256_hex(data)
    assert store.put_artifact(data, "text/plain") == digest
    assert _count(store, "artifacts") == 1
    assert store.get_artifact(digest) == data
    assert store.has_artifact(digest)
    missing = "f" * 64
    assert not store.has_artifact(missing)
    with pytest.raises(StoreError, match=f"no artifact with sha256 {missing}"):
        store.get_artifact(missing)


def _projection(version: int, base: int, covers: int) -> Projection:
    return Projection(
        version=version,
        base_state_version=base,
        covers_through_seq=covers,
        summary=f"summary v{version}",
        messages=[Message.user_text("kept")],
        report=CompactionReport(trigger="threshold", stages_run=["microcompact"], base_state_version=base),
    )


def test_projections_are_saved_unless_stale(store: Store) -> None:
    store.create_run("r", _spec())
    assert store.latest_projection("r") is None

    assert store.save_projection("r", _projection(1, 1, 3), expected_state_version=1) == 1
    assert store.latest_projection("r") == _projection(1, 1, 3)

    # the head moved while the compaction ran: discarded
    store.update_state("r", 1, lambda s: s.notes.append("x"), actor="agent", reason="n")
    with pytest.raises(StaleStateError, match="expected state_version 1, but the head is 2"):
        store.save_projection("r", _projection(2, 1, 5), expected_state_version=1)

    # never written over a newer (or equal) projection
    assert store.save_projection("r", _projection(3, 2, 8), expected_state_version=2) == 3
    with pytest.raises(StaleProjectionError, match="version 2 offered but version 3 is already stored"):
        store.save_projection("r", _projection(2, 2, 6), expected_state_version=2)

    assert [p.version for p in store.projections("r")] == [1, 3]
    assert store.latest_projection("r") == _projection(3, 2, 8)

    # the human's messages a summary quotes are kept as data beside it
    quoted = _projection(4, 2, 9).model_copy(update={"summary_users": ["keep </user_message> as is"]})
    store.save_projection("r", quoted, expected_state_version=2)
    assert store.latest_projection("r") == quoted


def test_audit_events_round_trip(store: Store) -> None:
    store.create_run("r", _spec())
    verdict = GateVerdict(
        action_id="a1", tool="edit_file", verdict="needs_approval", rule="approval", reason="needs alice",
        action_hash="0" * 64, state_version=1,
    )
    assert store.append_audit("r", verdict, actor="gate") == 2
    events = store.audit("r")
    assert [(e.seq, e.kind, e.actor) for e in events] == [(1, "run_started", "operator"), (2, "gate_verdict", "gate")]
    assert events[1].event == verdict
    assert events[1].prev_hash == events[0].hash


def test_reapply_on_head_lands_on_whatever_the_head_is(store, tmp_path):
    """Writers whose change must land whatever moved meanwhile reload and reapply on a lost race."""
    from longrun.models.spec import RunSpec

    store.create_run("run-uh", RunSpec(objective="o", workspace=str(tmp_path)))
    calls = []

    def add_note(state):
        calls.append(state.state_version)
        if len(calls) == 1:  # someone else writes while we compute
            head = store.load_state("run-uh")
            store.compare_and_set("run-uh", head.state_version, head.model_copy(update={"notes": ["theirs"]}), "x", "race")
        return state.model_copy(update={"notes": [*state.notes, "ours"]})

    new = store.reapply_on_head("run-uh", add_note, "test", "note")
    assert calls == [1, 2] and new.state_version == 3 and new.notes == ["theirs", "ours"]
    assert store.load_state("run-uh").notes == ["theirs", "ours"]
