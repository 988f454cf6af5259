"""Runaway loops stop at their cap: a model that never stops (an endless plan of tool calls) runs
until the first cap it hits (turns, model calls, tool calls, tokens, wall time); the reason is
recorded (runs.status/reason, the run_finished audit event) and shown (the status query and the
workflow result). Caps are checked at every turn boundary."""

from __future__ import annotations

from typing import Any

import pytest

from longrun.models.spec import RunCaps, RunSpec
from tests.support.harness import running_worker
from tests.support.policy import PlanProvider

pytestmark = pytest.mark.slow

HIGH = dict(max_turns=10_000, max_model_calls=10_000, max_tool_calls=10_000, max_tokens=100_000_000,
            max_wall_seconds=3_600)


class EndlessPlan(list):
    """A plan that never runs out: every turn lists the workspace again."""

    def __len__(self) -> int:
        return 10**9

    def __getitem__(self, step: Any) -> list[tuple[str, dict]]:
        return [("list_dir", {"path": "."})]


@pytest.mark.parametrize(
    ("cap", "value", "expected"),
    [
        ("max_turns", 4, "turn cap reached (4 turns)"),
        ("max_model_calls", 3, "model-call cap reached (3 calls)"),
        ("max_tool_calls", 5, "tool-call cap reached (5 calls)"),
        ("max_tokens", 5_000, "token cap reached ("),
        ("max_wall_seconds", 10, "wall-time cap reached (10 s)"),
    ],
)
async def test_a_runaway_loop_stops_at_the_cap_with_the_reason_recorded_and_shown(
    store, temporal_client, tmp_path, cap: str, value: int, expected: str
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    provider = PlanProvider(plan=EndlessPlan())
    caps = RunCaps(**{**HIGH, cap: value})
    async with running_worker(temporal_client, store, provider=provider) as h:
        run_id = await h.start(RunSpec(objective="loop forever", workspace=str(ws), caps=caps))
        result = await h.result(run_id, timeout=120)
        shown = await h.status(run_id)  # a closed workflow still answers the status query

    assert result.status == "failed" and expected in result.reason
    assert shown.status == "failed" and expected in shown.reason
    record = store.get_run(run_id)
    assert record.status == "failed" and expected in record.reason
    finished = [r.event for r in store.audit(run_id) if r.kind == "run_finished"]
    assert len(finished) == 1 and finished[0].status == "failed" and expected in finished[0].reason

    # it stopped *at* the cap, not later
    if cap == "max_turns":
        assert shown.turn == value
    elif cap == "max_model_calls":
        assert shown.model_calls == value == len(provider.requests)
    elif cap == "max_tool_calls":
        assert shown.tool_calls == value
    elif cap == "max_tokens":
        used = shown.usage.total_input + shown.usage.output_tokens
        calls_before = shown.model_calls - 1
        assert used >= value and calls_before >= 1
    else:
        assert shown.turn >= 2, "the loop did run for a while"
    assert store.verify_chain(run_id).ok


def test_default_caps_are_set_and_bounded() -> None:
    """Every cap has a default, so a run started without `caps` cannot loop forever."""
    caps = RunSpec(objective="o", workspace="/tmp").caps
    assert caps.max_turns == 200 and caps.max_model_calls == 300 and caps.max_tool_calls == 1_000
    assert caps.max_tokens == 20_000_000 and caps.max_wall_seconds == 6 * 3600
    with pytest.raises(ValueError, match="max_wall_seconds"):
        RunCaps(max_wall_seconds=0)
    with pytest.raises(ValueError, match="extra"):
        RunCaps(max_dollars=5)  # type: ignore[call-arg]
