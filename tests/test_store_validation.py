"""Bad input is refused with a message naming the field, and nothing is written."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import text

from longrun.errors import StoreError
from longrun.models import Message, RunSpec, TaskState
from longrun.models.state import MAX_TEXT
from longrun.store import InvalidInputError, Store

TABLES = ("runs", "task_states", "task_state_versions", "transcript_entries", "artifacts", "projections",
          "audit_events")


def _counts(store: Store) -> dict[str, int]:
    with store.engine.connect() as conn:
        return {t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one() for t in TABLES}


@pytest.fixture
def run(store: Store) -> Store:
    store.create_run("r", RunSpec(objective="fix the parser", constraints=["keep the API"], workspace="/tmp/ws"))
    store.append_transcript("r", Message.user_text("hello"), token_estimate=1)
    return store


def _head_json(store: Store) -> dict[str, Any]:
    return store.load_state("r").model_dump(mode="json")


def _expect_refused(store: Store, call: Callable[[], object], *fragments: str) -> str:
    before = _counts(store)
    head = store.load_state("r") if before["runs"] else None
    with pytest.raises(InvalidInputError) as info:
        call()
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    assert _counts(store) == before, "a refused write must write nothing"
    if head is not None:
        assert store.load_state("r") == head
    return message


def test_malformed_state_json_is_refused(run: Store) -> None:
    _expect_refused(run, lambda: run.compare_and_set("r", 1, '{"run_id": "r", "state_version": ', "agent", "x"),
                    "invalid new state", "Invalid JSON")
    _expect_refused(run, lambda: run.compare_and_set("r", 1, "[1, 2, 3]", "agent", "x"),
                    "invalid new state", "(value)")


def test_wrong_types_name_the_field(run: Store) -> None:
    bad = {**_head_json(run), "next_action": "fly", "state_version": 0, "constraints": "keep the API"}
    message = _expect_refused(run, lambda: run.compare_and_set("r", 1, bad, "agent", "x"), "invalid new state")
    assert "next_action: Input should be 'inspect', 'edit', 'test', 'ask_human' or 'stop'" in message
    assert "state_version: Input should be greater than or equal to 1" in message
    assert "constraints: Input should be a valid list" in message

    bad_effect = {**_head_json(run), "effects": [{"action_id": "a", "tool": "t", "status": "maybe",
                                                  "idempotency_key": "a"}]}
    _expect_refused(run, lambda: run.compare_and_set("r", 1, bad_effect, "agent", "x"), "effects.0.status")

    _expect_refused(run, lambda: run.compare_and_set("r", 1, 42, "agent", "x"),  # type: ignore[arg-type]
                    "new state: expected a TaskState, got int")
    _expect_refused(run, lambda: run.compare_and_set("r", "1", run.load_state("r"), "agent", "x"),  # type: ignore[arg-type]
                    "expected_version: expected an integer, got str")
    _expect_refused(run, lambda: run.compare_and_set("r", 1, run.load_state("r"), "", "x"), "actor: must not be empty")


def test_constructed_state_is_revalidated(run: Store) -> None:
    """A TaskState built with model_construct (no validation) is checked again by the store."""
    sneaky = TaskState.model_construct(**{**run.load_state("r").__dict__, "objective": ""})
    _expect_refused(run, lambda: run.compare_and_set("r", 1, sneaky, "agent", "x"),
                    "objective: String should have at least 1 character")


def test_state_for_another_run_is_refused(run: Store) -> None:
    other = run.load_state("r").model_copy(update={"run_id": "someone-else"})
    _expect_refused(run, lambda: run.compare_and_set("r", 1, other, "agent", "x"),
                    "run_id: the new state is for run 'someone-else', not 'r'")


def test_oversized_fields_are_refused(run: Store) -> None:
    too_long = {**_head_json(run), "objective": "x" * (MAX_TEXT + 1)}
    _expect_refused(run, lambda: run.compare_and_set("r", 1, too_long, "agent", "x"),
                    "objective: String should have at most 20000 characters")

    huge = {**_head_json(run), "notes": ["n" * MAX_TEXT] * 210}  # every note legal, the whole too big
    _expect_refused(run, lambda: run.compare_and_set("r", 1, huge, "agent", "x"),
                    "state: ", "bytes serialized is over the limit of 4,000,000 bytes")

    _expect_refused(run, lambda: run.compare_and_set("r", 1, run.load_state("r"), "a" * 201, "x"),
                    "actor: 201 characters is over the limit of 200")
    _expect_refused(run, lambda: run.compare_and_set("r", 1, run.load_state("r"), "agent", "x" * (MAX_TEXT + 1)),
                    "reason: 20001 characters")
    _expect_refused(run, lambda: run.create_run("r" * 201, RunSpec(objective="o", workspace="/tmp")),
                    "run_id: 201 characters is over the limit of 200")
    _expect_refused(run, lambda: run.set_run_status("r", "paused", "x" * (MAX_TEXT + 1)), "reason: 20001 characters")


def test_bad_run_spec_is_refused(run: Store) -> None:
    bad = {"objective": "", "workspace": "relative/path", "model": "gpt"}
    message = _expect_refused(run, lambda: run.create_run("r2", bad), "invalid run spec")  # type: ignore[arg-type]
    assert "objective: String should have at least 1 character" in message
    assert "workspace: Value error, workspace must be an absolute path" in message
    assert "model: Value error, model must be 'scripted'" in message


def test_bad_transcript_input_is_refused(run: Store) -> None:
    _expect_refused(run, lambda: run.append_transcript("r", Message.user_text("x"), token_estimate="12"),  # type: ignore[arg-type]
                    "token_estimate: expected an integer, got str")
    _expect_refused(run, lambda: run.append_transcript("r", Message.user_text("x"), token_estimate=-1),
                    "token_estimate: must be >= 0")
    _expect_refused(run, lambda: run.append_transcript("r", {"role": "system", "content": []}, token_estimate=1),  # type: ignore[arg-type]
                    "invalid transcript message", "role: Input should be 'user' or 'assistant'")
    _expect_refused(run, lambda: run.append_transcript("r", Message.user_text("x"), token_estimate=1,
                                                      usage={"input_tokens": "lots"}),  # type: ignore[arg-type]
                    "invalid usage", "input_tokens")
    big = Message.user_text("y" * 8_100_000)
    _expect_refused(run, lambda: run.append_transcript("r", big, token_estimate=1),
                    "message: ", "over the limit of 8,000,000 bytes", "artifact")


def test_bad_audit_event_and_artifact_are_refused(run: Store) -> None:
    _expect_refused(run, lambda: run.append_audit("r", {"kind": "made_up"}),  # type: ignore[arg-type]
                    "invalid audit event", "made_up")
    _expect_refused(run, lambda: run.append_audit("r", {"kind": "tool_ran", "tool": "t"}),  # type: ignore[arg-type]
                    "call_id: Field required")
    _expect_refused(run, lambda: run.put_artifact("text, not bytes"),  # type: ignore[arg-type]
                    "data: expected bytes, got str")
    _expect_refused(run, lambda: run.set_calibration("r", {"ratio": float("nan")}), "calibration: not JSON")


def test_malformed_stored_state_gives_a_clear_error(run: Store) -> None:
    """If someone writes garbage into the head row directly, reading it names what is wrong."""
    with run.engine.begin() as conn:
        conn.execute(text("""UPDATE task_states SET state = '{"run_id": "r", "state_version": "two"}'
                             WHERE run_id = 'r'"""))
    with pytest.raises(StoreError, match=r"stored head state of run r does not parse: state_version: .*objective: "
                                         r"Field required"):
        run.load_state("r")
