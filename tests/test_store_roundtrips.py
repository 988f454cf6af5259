"""Round trips of the store's hot calls, counted from libpq's trace (as tests/test_store_cas.py does
for compare-and-set): a warm append to the transcript or the audit is one statement; a cold or
wrong cached head costs one read of the head and still chains correctly; reads and small writes
are one statement each, an unknown run included."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest
from sqlalchemy import text

from longrun.errors import RunNotFoundError
from longrun.models import CompactionReport, Message, Projection, RunSpec, chain_hash
from longrun.models.audit import RunControl, ToolRan
from longrun.store import Store
from longrun.store import appends as appends_module
from longrun.store.chain import audit_payload, transcript_payload
from tests.test_store_cas import _round_trips

APPEND = "WITH upd AS"
AUDIT_HEAD = "SELECT audit_count, audit_head"
TRANSCRIPT_HEAD = "SELECT transcript_count, transcript_head"
TRANSCRIPT_READ = "WITH RECURSIVE seg(run_id,"
"""A transcript read: one statement, which follows a fork's lineage (`run_lineage`) to its parents' entries."""


def _spec() -> RunSpec:
    return RunSpec(objective="count round trips", workspace="/tmp/ws")


def _ran(i: int) -> ToolRan:
    return ToolRan(tool="read_file", call_id=f"c{i}", is_error=False)


@pytest.fixture
def one(db_url: str) -> Iterator[Store]:
    """A store whose pool holds exactly one connection, so every call's traffic can be traced."""
    with Store.from_url(db_url, pool_size=1, max_overflow=0) as s:
        yield s


def _chained(store: Store, run_id: str) -> None:
    """Every row of both logs is chained on its predecessor, and the whole run verifies."""
    for rows in (store.transcript(run_id), store.audit(run_id)):
        assert [r.seq for r in rows] == list(range(1, len(rows) + 1))
        for before, after in itertools.pairwise(rows):
            assert after.prev_hash == before.hash
    verdict = store.verify_chain(run_id)
    assert verdict.ok, str(verdict)


# ---------------------------------------------------------------------- warm appends


def test_a_warm_append_audit_is_one_statement(one: Store) -> None:
    one.create_run("r", _spec())  # create_run tells the store the heads it wrote
    with _round_trips(one) as trips:
        assert one.append_audit("r", _ran(1), actor="tool") == 2
    assert trips == [APPEND], trips

    with _round_trips(one) as trips:
        assert [one.append_audit("r", _ran(i)) for i in range(2, 12)] == list(range(3, 13))
    # no BEGIN, no COMMIT, no lock, no read; psycopg prepares the statement after a few runs on a
    # connection (one more round trip, Parse, once per connection), then only binds and executes it
    assert trips == [APPEND] * 11, trips
    _chained(one, "r")


def test_a_warm_append_transcript_is_one_statement(one: Store) -> None:
    one.create_run("r", _spec(), opening=Message.user_text("hello"), opening_token_estimate=1)
    with _round_trips(one) as trips:
        assert one.append_transcript("r", Message.user_text("two"), token_estimate=2, turn=1) == 2
        assert one.append_transcript("r", Message.user_text("three"), token_estimate=3) == 3
    assert trips == [APPEND, APPEND], trips
    _chained(one, "r")


def test_a_batch_of_audit_events_is_one_statement(one: Store) -> None:
    one.create_run("r", _spec())
    with _round_trips(one) as trips:
        assert one.append_audits("r", [(_ran(1), "gate"), (_ran(2), "tool"), (RunControl(action="pause"), "human")]) \
            == [2, 3, 4]
    assert trips == [APPEND], trips
    _chained(one, "r")


# ---------------------------------------------------------------------- cold and wrong heads


def test_a_cold_store_reads_the_head_once_then_appends_warm(db_url: str, store: Store) -> None:
    store.create_run("r", _spec())
    store.append_audit("r", _ran(0))
    store.append_transcript("r", Message.user_text("one"), token_estimate=1)
    with Store.from_url(db_url, pool_size=1, max_overflow=0) as cold, _round_trips(cold) as trips:
        assert cold.append_audit("r", _ran(1)) == 3
        assert cold.append_audit("r", _ran(2)) == 4
        assert cold.append_transcript("r", Message.user_text("two"), token_estimate=1) == 2
        assert cold.append_transcript("r", Message.user_text("three"), token_estimate=1) == 3
    assert trips == [AUDIT_HEAD, APPEND, APPEND, TRANSCRIPT_HEAD, APPEND, APPEND], trips
    _chained(store, "r")


@pytest.mark.parametrize("chain", ["audit", "transcript"])
@pytest.mark.parametrize("guess", ["wrong hash", "wrong count", "both wrong"])
def test_a_wrong_cached_head_writes_nothing_and_is_corrected(one: Store, chain: str, guess: str) -> None:
    one.create_run("r", _spec(), opening=Message.user_text("hello"), opening_token_estimate=1)
    one.append_audit("r", _ran(0))
    count, digest = one._chain_heads[chain]["r"]
    one._chain_heads[chain]["r"] = {"wrong hash": (count, "f" * 64), "wrong count": (count + 3, digest),
                                    "both wrong": (count - 1, "e" * 64)}[guess]

    with _round_trips(one) as trips:
        if chain == "audit":
            assert one.append_audit("r", _ran(1)) == 3
        else:
            assert one.append_transcript("r", Message.user_text("two"), token_estimate=1) == 2
    # the guess was refused by the statement itself, the head read, and the row chained on it
    assert trips == [APPEND, AUDIT_HEAD if chain == "audit" else TRANSCRIPT_HEAD, APPEND], trips
    assert one._chain_heads[chain]["r"][0] == count + 1
    _chained(one, "r")


def test_reads_tell_the_store_the_head(db_url: str, store: Store) -> None:
    """A store that read the transcript or the audit (as an activity does before it appends)
    appends without reading the head, even though it never wrote to the run."""
    store.create_run("r", _spec(), opening=Message.user_text("hello"), opening_token_estimate=1)
    store.append_audit("r", _ran(0))
    with Store.from_url(db_url, pool_size=1, max_overflow=0) as other:
        other.last_transcript_entry("r")
        other.audit("r")
        with _round_trips(other) as trips:
            assert other.append_transcript("r", Message.user_text("two"), token_estimate=1) == 2
            assert other.append_audit("r", _ran(1)) == 3
        assert trips == [APPEND, APPEND], trips
    _chained(store, "r")


def test_the_locked_fallback_appends_when_optimism_runs_out(one: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """After `OPTIMISTIC_TRIES` lost tries an append reads the head under a row lock, where its
    statement cannot lose; with none allowed that is all it does."""
    one.create_run("r", _spec())
    monkeypatch.setattr(appends_module, "OPTIMISTIC_TRIES", 0)
    with _round_trips(one) as trips:
        assert one.append_audits("r", [(_ran(1), "a"), (_ran(2), "b")]) == [2, 3]
    assert trips == ["BEGIN", AUDIT_HEAD, APPEND, "COMMIT"], trips
    with _round_trips(one) as trips:
        assert one.append_transcript("r", Message.user_text("x"), token_estimate=1) == 1
    assert trips == ["BEGIN", TRANSCRIPT_HEAD, APPEND, "COMMIT"], trips
    _chained(one, "r")


def test_an_unknown_run_is_refused_after_one_read(one: Store) -> None:
    for append, head in ((lambda: one.append_audit("ghost", _ran(1)), AUDIT_HEAD),
                         (lambda: one.append_audits("ghost", [(_ran(1), "a")]), AUDIT_HEAD),
                         (lambda: one.append_transcript("ghost", Message.user_text("x"), token_estimate=1),
                          TRANSCRIPT_HEAD)):
        with _round_trips(one) as trips, pytest.raises(RunNotFoundError, match="unknown run id 'ghost'"):
            append()
        assert trips == [head], trips
    with one.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM audit_events")).scalar_one() == 0


def test_the_appended_hash_is_chain_hash_over_the_canonical_row(store: Store) -> None:
    """The same hash format as before: `chain_hash(prev_hash, payload)` of what the row holds, text
    outside ASCII included (the `json` column keeps the hashed text byte for byte)."""
    store.create_run("r", _spec())
    odd = "naïve café ✓ 😀 \"quoted\" \\ back\nslash"
    store.append_audit("r", ToolRan(tool="grep", call_id=odd, is_error=True), actor="tool ✓")
    store.append_transcript("r", Message.user_text(odd), token_estimate=4, usage=None, turn=2)
    with store.engine.connect() as conn:
        a = conn.execute(text("SELECT * FROM audit_events WHERE run_id = 'r' AND seq = 2")).mappings().one()
        t = conn.execute(text("SELECT * FROM transcript_entries WHERE run_id = 'r' AND seq = 1")).mappings().one()
        head = conn.execute(text("SELECT * FROM runs WHERE run_id = 'r'")).mappings().one()
    assert a["hash"] == chain_hash(a["prev_hash"], audit_payload(
        "r", 2, a["kind"], a["event"], a["actor"], a["created_at"])) == head["audit_head"]
    assert t["hash"] == chain_hash(t["prev_hash"], transcript_payload(
        "r", 1, t["role"], t["content"], t["token_estimate"], t["usage"], t["turn"], t["created_at"])) \
        == head["transcript_head"]
    assert (head["audit_count"], head["transcript_count"]) == (2, 1)
    assert a["event"]["call_id"] == odd and t["usage"] is None and t["turn"] == 2
    _chained(store, "r")


# ---------------------------------------------------------------------- reads


def test_transcript_reads_are_one_statement(one: Store) -> None:
    one.create_run("r", _spec())
    for i in range(8):
        one.append_transcript("r", Message.user_text(f"m{i}"), token_estimate=i, turn=i)
    with _round_trips(one) as trips:
        assert [e.seq for e in one.transcript("r", after_seq=3)] == [4, 5, 6, 7, 8]
        assert [e.seq for e in one.transcript("r", after_seq=3, through_seq=5)] == [4, 5]
        assert one.transcript("r", after_seq=8) == []
        last = one.last_transcript_entry("r")
    assert trips == [TRANSCRIPT_READ] * 4, trips
    assert last is not None and (last.seq, last.turn, last.token_estimate) == (8, 7, 7)
    assert last == one.transcript("r", after_seq=7)[0]

    one.create_run("empty", _spec())
    with _round_trips(one) as trips:
        assert one.last_transcript_entry("empty") is None
        assert one.transcript("empty") == []
        with pytest.raises(RunNotFoundError, match="unknown run id 'ghost'"):
            one.last_transcript_entry("ghost")
        with pytest.raises(RunNotFoundError, match="unknown run id 'ghost'"):
            one.transcript("ghost", after_seq=2)
    # an empty transcript and an unknown run are told apart by the same one statement
    assert trips == [TRANSCRIPT_READ] * 4, trips


def test_other_reads_and_small_writes_are_one_statement(one: Store) -> None:
    one.create_run("r", _spec())
    digest = one.put_artifact(b"bytes \x00\xff", "application/octet-stream")
    one.save_projection("r", Projection(version=1, base_state_version=1, covers_through_seq=0, summary="s",
                                        messages=[], report=CompactionReport(trigger="threshold")),
                        expected_state_version=1)
    calls = {
        "get_run": lambda: one.get_run("r"),
        "load_spec": lambda: one.load_spec("r"),
        "get_calibration": lambda: one.get_calibration("r"),
        "set_calibration": lambda: one.set_calibration("r", {"ratio": 1.2}),
        "set_run_status": lambda: one.set_run_status("r", "paused", "asked"),
        "latest_projection": lambda: one.latest_projection("r"),
        "put_artifact": lambda: one.put_artifact(b"bytes \x00\xff", "application/octet-stream"),
        "get_artifact": lambda: one.get_artifact(digest),
        "has_artifact": lambda: one.has_artifact(digest),
        "head_version": lambda: one.head_version("r"),
        "audit": lambda: one.audit("r"),
        "load_state": lambda: one.load_state("r"),
    }
    for name, call in calls.items():
        with _round_trips(one) as trips:
            call()
        assert len(trips) == 1 and trips[0] not in ("BEGIN", "COMMIT", ";"), (name, trips)
    assert one.get_artifact(digest) == b"bytes \x00\xff" and one.has_artifact(digest)
    assert not one.has_artifact("0" * 64)
    assert one.get_calibration("r") == {"ratio": 1.2}
    assert (one.get_run("r").status, one.get_run("r").reason) == ("paused", "asked")
    projection = one.latest_projection("r")
    assert projection is not None and projection.summary == "s"

    for name, call in {
        "get_run": lambda: one.get_run("ghost"),
        "get_calibration": lambda: one.get_calibration("ghost"),
        "set_calibration": lambda: one.set_calibration("ghost", {}),
        "set_run_status": lambda: one.set_run_status("ghost", "paused"),
        "latest_projection": lambda: one.latest_projection("ghost"),
        "head_version": lambda: one.head_version("ghost"),
        "audit": lambda: one.audit("ghost"),
    }.items():
        with _round_trips(one) as trips, pytest.raises(RunNotFoundError, match="unknown run id 'ghost'"):
            call()
        assert len(trips) == 1, (name, trips)
