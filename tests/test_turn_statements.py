"""Statements per turn, counted on the real stack (worker, Temporal, Postgres) for the three kinds
of turn a run is made of: a plain turn (a model call that calls no tool), a read-tool turn and an
effect turn (an approved write). The counts are upper bounds a regression breaks: a turn that
reads the state once more, or writes its audit in two statements instead of one, fails here.
Counts, not times (see `longrun.store.counting`)."""

from __future__ import annotations

import pytest

from longrun.client import decide
from longrun.errors import StaleStateError
from longrun.models import sha256_hex
from longrun.models.audit import ErrorRecorded, ToolRan
from longrun.models.blocks import Message, TextBlock
from longrun.models.context import CompactionReport, Projection
from longrun.models.provider import Usage
from longrun.models.spec import RunSpec
from longrun.models.state import TaskState
from longrun.store import Store
from longrun.store.artifacts import unless_pruned
from longrun.store.counting import Invocation, count_statements
from longrun.store.records import TranscriptRecord
from longrun.store.spend import Settle
from tests.support.harness import running_worker
from tests.support.policy import PlanProvider, greeting_workspace
from tests.test_store_cas import _round_trips

pytestmark = pytest.mark.slow

PLAN = [
    [("read_file", {"path": "hello.txt"})],
    [("read_file", {"path": "hello.txt"})],
    [("set_next_action", {"next_action": "edit"})],
    [("write_file", {"path": "hello.txt", "content": "hello world\n"})],
]
"""Turn 1 reads (and commits nothing before it: the run's first turn), turn 2 reads after
committing turn 1, turn 3 changes the state (a state tool), turn 4 writes after an approval,
turn 5 answers in text (a plain turn)."""

MAX_STATEMENTS = {"read": 6, "state": 7, "effect": 21, "plain": 4}
"""The most statements each kind of turn may send: what they send today. Before issue 26 they sent
15, 17, 42 and 10 (the state read again by every write; the calibration, the newest entry, the
call and the projection each read on their own; credentials read in a transaction of three round
trips; an artifact and its link in two statements; the calibration saved on its own). Issue 28
added two per model call: the spend ledger's row before the provider is called, and its answer
(11, 12, 26 and 8). Then the results a turn commits came with its first read, and the answer's
settle with its append: one statement less each (9, 10, 24, 6). Then the answer's audit events
rode its append too (the turn's last statement): one less again (8, 9, 23, 5). Then the turn's
first read brought the transcript tail its request renders, and a tool's output rode the audit
batch naming it: one less for every turn, two for a turn that runs a tool (6, 7, 21, 4)."""


def _turns(invocations: list[Invocation]) -> list[list[Invocation]]:
    """The invocations grouped by turn: each `turn` activity opens one (what runs before the
    first, such as `load_run`, and `finish_run` after the last belong to no turn)."""
    turns: list[list[Invocation]] = []
    for inv in invocations:
        if inv.activity == "turn":
            turns.append([])
        if turns and inv.activity != "finish_run":
            turns[-1].append(inv)
    return turns


def _show(kind: str, turn: list[Invocation]) -> str:
    return f"{kind}: {sum(len(i.statements) for i in turn)} " + ", ".join(
        f"{i.activity}={len(i.statements)} {i.statements}" for i in turn)


async def test_statements_per_turn_kind_stay_under_their_bounds(db_url, temporal_client, tmp_path):
    ws = greeting_workspace(tmp_path)
    with Store.from_url(db_url) as store, count_statements(store.engine) as count:
        async with running_worker(temporal_client, store, provider=PlanProvider(plan=PLAN)) as h:
            run_id = await h.start(RunSpec(objective="Fix the greeting.", workspace=str(ws), approvers=["alice"]))
            pending = (await h.wait_for(run_id, lambda s: s.status in ("waiting_approval", "completed"))).pending_approval
            await decide.approve(h.client, run_id, pending.approval_id, "alice")
            result = await h.result(run_id)
    assert result.status == "completed", result
    assert (ws / "hello.txt").read_text() == "hello world\n"
    turns = _turns(count.invocations)
    assert [[i.activity for i in t] for t in turns][1:] == [
        ["turn", "tool_step"],
        ["turn", "tool_step"],
        ["turn", "tool_step", "record_event", "grant_approval", "gate", "record_intent", "run_tool"],
        ["turn"],
    ], [[i.activity for i in t] for t in turns]
    kinds = {"read": turns[1], "state": turns[2], "effect": turns[3], "plain": turns[4]}
    shown = "\n".join(_show(k, t) for k, t in kinds.items())
    print(shown)
    for kind, turn in kinds.items():
        assert sum(len(i.statements) for i in turn) <= MAX_STATEMENTS[kind], shown
        for inv in turn:  # the state is read (and parsed) at most once per activity
            assert sum(st.startswith("SELECT t.state") for st in inv.statements) <= 1, shown


def _note(state: TaskState) -> TaskState:
    return state.model_copy(update={"notes": [*state.notes, f"n{len(state.notes)}"]})


def test_a_held_head_is_written_on_without_a_read_and_loses_when_it_moved(db_url):
    """What lets an activity skip its second read of the state: `update_state` and
    `reapply_on_head` apply the change to the head the caller holds, and the compare-and-set still
    decides. A held head another writer moved past writes nothing (`update_state`) or is re-applied
    on the new head after one reload (`reapply_on_head`)."""
    with Store.from_url(db_url, pool_size=1, max_overflow=0) as one:
        one.create_run("r", RunSpec(objective="count", workspace="/tmp/ws"))
        held = one.load_state("r")
        with _round_trips(one) as trips:
            v2 = one.update_state("r", 1, _note, "agent", "held", head=held)
        assert trips == ["WITH upd AS"], trips  # no read of the state before the write
        assert v2.state_version == 2

        one.compare_and_set("r", 2, _note(v2), "other", "another writer")  # the head moves to 3
        with pytest.raises(StaleStateError):
            one.update_state("r", 2, _note, "agent", "on a moved head", head=v2)
        assert [h.reason for h in one.state_history("r")] == ["run created", "held", "another writer"]

        v4 = one.reapply_on_head("r", _note, "ledger", "re-applied", head=v2)
        assert v4.state_version == 4 and v4.notes == ["n0", "n1", "n2"], v4.notes
        assert one.verify_chain("r").ok


def test_the_turns_read_brings_the_tool_results_it_commits(db_url):
    """What lets a turn commit the previous turn's results without reading them one by one: the
    artifacts named come with the head, in the same round trip; an unknown hash is missing."""
    with Store.from_url(db_url, pool_size=1, max_overflow=0) as one:
        one.create_run("r", RunSpec(objective="count", workspace="/tmp/ws"))
        sha = one.put_artifact(b"tool output \x00 bytes", run_id="r")
        unknown = "0" * 64
        with _round_trips(one) as trips:
            head = one.load_turn_head("r", [sha, unknown])
        assert len(trips) == 1, trips
        assert unless_pruned(sha, head.artifacts[sha]) == b"tool output \x00 bytes"
        assert unknown not in head.artifacts
        assert one.load_turn_head("r").artifacts == {}


def test_an_answer_settles_its_request_in_its_own_append_once(db_url):
    """The answer and the ledger's settle are one statement: a try whose guessed transcript head
    is wrong writes neither (so the settle never names an entry that was not written), the try
    that lands settles the request on the entry it wrote, and a later settle finds it done."""
    with Store.from_url(db_url, pool_size=1, max_overflow=0) as one:
        one.create_run("r", RunSpec(objective="count", workspace="/tmp/ws"))
        one.record_request_sent("r", turn=1, overflow_retry=0, attempt=1, model="m", estimate_usd=0.01)
        one._remember_head("r", 41, "not-the-head", "transcript")  # the first try loses
        usage = Usage(input_tokens=100, output_tokens=5)
        seq = one.append_transcript("r", Message(role="assistant", content=[TextBlock(text="done")]), token_estimate=3,
                                    usage=usage, turn=1, settle=Settle(usage, 0.25))
        assert [(c.status, c.transcript_seq, float(c.cost_usd or 0)) for c in one.request_costs("r")] == [
            ("answered", seq, 0.25)]
        assert one.settle_turn("r", turn=1, transcript_seq=seq, usage=usage, cost_usd=0.25) is False
        assert one.verify_chain("r").ok


def test_an_answer_and_its_audit_events_are_one_statement_and_land_together(db_url):
    """What saves the turn's last statement: the model's answer carries its audit events (made
    for the seq it gets), both chains' heads checked and moved by one UPDATE. A try on a wrong
    audit head writes neither the entry nor the events; the try that lands writes both, chained."""
    with Store.from_url(db_url, pool_size=1, max_overflow=0) as one:
        one.create_run("r", RunSpec(objective="count", workspace="/tmp/ws"))
        one.append_audit("r", ErrorRecorded(where="before", message="first"))
        answer = Message(role="assistant", content=[TextBlock(text="done")])

        def events(seq: int) -> list[tuple[ErrorRecorded, str]]:
            return [(ErrorRecorded(where="model_call", message=f"answer at {seq}"), "system")]

        with _round_trips(one) as trips:
            seq = one.append_transcript("r", answer, token_estimate=3, turn=1, audits=events)
        assert trips == ["WITH upd AS"], trips  # the entry and its event: one round trip
        last = one.audit("r")[-1]
        assert isinstance(last.event, ErrorRecorded) and last.event.message == f"answer at {seq}", last

        one._remember_head("r", 7, "not-the-head", "audit")  # the next try guesses the audit head wrong
        seq2 = one.append_transcript("r", answer, token_estimate=3, turn=2, audits=events)
        assert seq2 == seq + 1  # numbered once: the losing try wrote no entry
        assert [a.event.message for a in one.audit("r") if isinstance(a.event, ErrorRecorded)] == [
            "first", f"answer at {seq}", f"answer at {seq2}"]
        assert one.verify_chain("r").ok


def _entries(store: Store, run_id: str, sizes: list[int]) -> None:
    for i, tokens in enumerate(sizes):
        role = "assistant" if i % 2 else "user"
        store.append_transcript(run_id, Message(role=role, content=[TextBlock(text=f"entry {i} " + "x" * tokens)]),
                                token_estimate=tokens, turn=i)


@pytest.mark.parametrize("ratio", [1.0, 1.37])
@pytest.mark.parametrize("base", [0.0, 150.0, 390.0, 10_000.0])
def test_the_turns_read_brings_the_tail_a_read_after_its_append_would(db_url, ratio, base):
    """What saves the turn's second read: the tail after the projection comes with the head (for
    the reach over the stored calibration's ratio), and the entry the turn then appends is added
    to it as stored (redacted). Its entries are those `transcript_tail` reads after the append,
    whatever the reach cuts: none of the older ones, all of them, or a window in between."""
    with Store.from_url(db_url, pool_size=1, max_overflow=0) as one:
        one.create_run("r", RunSpec(objective="count", workspace="/tmp/ws"))
        one.set_calibration("r", {"ratio": ratio, "samples": 3})
        _entries(one, "r", [40, 90, 10, 120, 60, 30, 80])
        with _round_trips(one) as trips:
            head = one.load_turn_head("r", tail_base=base)
        assert len(trips) == 1, trips
        tail = head.tail
        assert tail is not None and tail.tokens == int(base / ratio) and tail.through == 7 and tail.after == 0
        secret = "sk-ant-api03-" + "A" * 40
        written: list[TranscriptRecord] = []
        one.append_transcript("r", Message(role="user", content=[TextBlock(text=f"result 7 {secret}")]),
                              token_estimate=50, turn=7, written=written.append)
        assert tail.extend(written[0])
        kept = tail.entries("r")
        assert kept == one.transcript_tail("r", after_seq=0, tokens=tail.tokens)
        assert secret not in kept[-1].message.content[0].text  # type: ignore[union-attr]
        assert one.load_turn_head("r").tail is None  # none asked for, none read


def test_the_tail_starts_after_the_projection_and_refuses_an_append_it_did_not_see(db_url):
    """The tail is the stretch after the newest projection's cover (what the request renders after
    the summary), and an entry that is not the next one (another writer appended first) is not
    added: the turn reads the tail again instead."""
    with Store.from_url(db_url, pool_size=1, max_overflow=0) as one:
        one.create_run("r", RunSpec(objective="count", workspace="/tmp/ws"))
        _entries(one, "r", [40, 90, 10, 120])
        one.save_projection("r", Projection(version=1, base_state_version=1, covers_through_seq=2, summary="s",
                                            messages=[], report=CompactionReport(trigger="threshold")),
                            expected_state_version=1)
        tail = one.load_turn_head("r", tail_base=10_000.0).tail
        assert tail is not None and tail.after == 2 and [e.seq for e in tail.entries("r")] == [3, 4]
        _entries(one, "r", [5])  # another writer: entry 5
        written: list[TranscriptRecord] = []
        one.append_transcript("r", Message.user_text("mine"), token_estimate=3, written=written.append)
        assert written[0].seq == 6 and not tail.extend(written[0])
        assert [e.seq for e in tail.entries("r")] == [3, 4]


def test_a_tool_result_lands_with_its_audit_event_in_one_statement(db_url):
    """What saves a tool call's artifact write: the output and its link to the run ride the audit
    batch whose `tool_ran` names it. A try on a wrong audit head writes neither; the one that lands
    writes both; bytes `longrun prune` emptied are put back."""
    with Store.from_url(db_url, pool_size=1, max_overflow=0) as one:
        one.create_run("r", RunSpec(objective="count", workspace="/tmp/ws"))
        one.create_run("other", RunSpec(objective="count", workspace="/tmp/ws"))
        one.append_audit("r", ErrorRecorded(where="before", message="first"))
        data = b"file contents\n" * 100
        sha = sha256_hex(data)
        event = ToolRan(tool="read_file", call_id="c1", is_error=False, artifact_sha256=sha, output_bytes=len(data),
                        summary="file contents")
        n = len(one.audit("r"))
        with _round_trips(one) as trips:
            seqs = one.append_audits("r", [(event, "system")], artifacts=[data])
        assert trips == ["WITH upd AS"], trips
        assert seqs == [n + 1] and one.get_family_artifact("r", sha) == data
        with pytest.raises(Exception, match="belongs to"):
            one.get_family_artifact("other", sha)  # linked to the run that stored it only

        one._remember_head("r", 7, "not-the-head", "audit")  # the next try guesses wrong, then lands
        again = b"second output"
        assert one.append_audits("r", [(event, "system")], artifacts=[again]) == [n + 2]
        assert one.get_family_artifact("r", sha256_hex(again)) == again
        assert one.verify_chain("r").ok

        with one.engine.begin() as conn:  # as `longrun prune` leaves bytes no live run links to
            conn.exec_driver_sql("UPDATE artifacts SET data = '', pruned_at = now() WHERE sha256 = %s", (sha,))
        one.append_audits("other", [(event, "system")], artifacts=[data])
        assert one.get_family_artifact("other", sha) == data
