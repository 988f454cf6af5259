"""The fact store in PostgreSQL (`longrun/store/facts.py`, migration 0008): rows are saved with the
projection that added them, in its transaction, redacted, append-only, and read back in order."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from longrun.context import Calibration, compact
from longrun.context.factstore import FactStore
from longrun.errors import AppendOnlyViolation, StaleStateError, StoreError
from longrun.models import CompactionReport, ContextPolicy, Message, Projection, RunSpec, TaskState, TranscriptItem
from longrun.models.context import FactRow
from longrun.store import Store


def _row(seq: int, text_: str, **kw: object) -> FactRow:
    fields: dict[str, object] = {"kind": "value", "source": "user", "subject": text_.lower(), **kw}
    return FactRow(seq=seq, source_seq=seq, text=text_, **fields)  # type: ignore[arg-type]


def _projection(version: int, base: int, rows: list[FactRow]) -> Projection:
    return Projection(version=version, base_state_version=base, covers_through_seq=3, summary="s", messages=[],
                      report=CompactionReport(trigger="threshold"), new_facts=rows)


def test_rows_are_saved_with_their_projection_and_read_back_in_order(store: Store) -> None:
    store.create_run("f", RunSpec(objective="facts", workspace="/tmp/ws"))
    assert store.facts("f") == []
    first = [_row(1, "billing-svc listens on port 8443."), _row(2, "Never deploy on Fridays.", kind="rule")]
    store.save_projection("f", _projection(1, 1, first), expected_state_version=1)
    second = [_row(3, "Actually billing-svc listens on port 9443.", final=True, supersedes=[1])]
    store.save_projection("f", _projection(2, 1, second), expected_state_version=1)
    rows = store.facts("f")
    assert rows == first + second
    assert [r.seq for r in FactStore(rows).current()] == [2, 3]


def test_a_stale_projection_leaves_no_rows(store: Store) -> None:
    store.create_run("g", RunSpec(objective="facts", workspace="/tmp/ws"))
    store.update_state("g", 1, lambda s: s.notes.append("moved"), actor="agent", reason="n")
    with pytest.raises(StaleStateError):
        store.save_projection("g", _projection(1, 1, [_row(1, "port 8443")]), expected_state_version=1)
    assert store.facts("g") == []


def test_rows_from_an_older_store_are_refused_with_what_to_do(store: Store) -> None:
    store.create_run("h", RunSpec(objective="facts", workspace="/tmp/ws"))
    store.save_projection("h", _projection(1, 1, [_row(1, "port 8443")]), expected_state_version=1)
    with pytest.raises(StoreError, match="start at 1, the store's next is 2: the compaction read an older store; run it again"):
        store.save_projection("h", _projection(2, 1, [_row(1, "port 9443")]), expected_state_version=1)
    assert [p.version for p in store.projections("h")] == [1], "nor is the projection saved"


def test_a_secret_in_a_fact_is_redacted_before_it_is_stored(store: Store) -> None:
    secret = "sk-ant-api03-" + "A1b2C3d4" * 5
    store.create_run("k", RunSpec(objective="facts", workspace="/tmp/ws"))
    store.save_projection("k", _projection(1, 1, [_row(1, f"The API key is {secret}.")]), expected_state_version=1)
    (row,) = store.facts("k")
    assert secret not in row.text and secret not in row.subject


def test_fact_rows_are_append_only(store: Store) -> None:
    store.create_run("m", RunSpec(objective="facts", workspace="/tmp/ws"))
    store.save_projection("m", _projection(1, 1, [_row(1, "port 8443")]), expected_state_version=1)
    for sql in ("UPDATE facts SET text = 'port 1' WHERE run_id = 'm'", "DELETE FROM facts WHERE run_id = 'm'"):
        with pytest.raises(AppendOnlyViolation, match="table facts is append-only"):
            with store.transaction("tamper") as s:
                s.execute(text(sql))
    assert [r.text for r in store.facts("m")] == ["port 8443"]


def test_compactions_over_the_stored_store_add_only_what_is_new(store: Store) -> None:
    """Two compactions as the activity runs them: the store read from PostgreSQL, passed to
    `compact`, the rows it returns saved with the projection; the second adds only the newer
    entries' facts, and its ledger still shows the first one's facts."""
    store.create_run("n", RunSpec(objective="Keep the facts.", workspace="/tmp/ws"))
    state = TaskState(run_id="n", state_version=1, objective="Keep the facts.")
    policy = ContextPolicy(budget=2_000, trigger=2_000, target_ratio=0.9, keep=1, clear_at_least=0, tail_tokens=60)
    chatter = "Sounds good, carry on as planned and keep me posted on anything unusual. " * 12
    texts = ["billing-svc listens on port 8443.", "SAFETY RULE: Never print the vault token.", *[chatter] * 6]
    items: list[TranscriptItem] = []

    def say(batch: list[str]) -> None:
        for t in batch:
            for m in (Message.user_text(t), Message(role="assistant", content=[{"type": "text", "text": "Noted."}])):
                items.append(TranscriptItem(seq=len(items) + 1, message=m))

    say(texts)
    previous = None
    for version in (1, 2):
        p = compact(items, previous=previous, state=state, policy=policy, window=30_000, trigger="operator",
                    calibration=Calibration(), force=True, facts=store.facts("n"))
        assert "summarize" in p.report.stages_run
        store.save_projection("n", p.model_copy(update={"version": version}), expected_state_version=1)
        previous = store.latest_projection("n")
        say(["auth-svc listens on port 9443.", *[chatter] * 6])
    rows = store.facts("n")
    assert [r.text for r in rows if r.kind == "rule"] == ["SAFETY RULE: Never print the vault token."], "read once"
    assert {"billing-svc listens on port 8443.", "auth-svc listens on port 9443."} <= {r.text for r in rows}
    assert previous is not None and "billing-svc listens on port 8443." in (previous.summary or "")
