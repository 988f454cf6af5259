"""Behaviour of the pipeline's stages, summaries, triggers and rendering on small transcripts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from longrun.context import (
    Calibration,
    ExtractiveSummarizer,
    compact,
    estimate_request,
    fit_request,
    render_request,
    should_compact,
    validate_summary,
)
from longrun.context.transcript import cleared_references
from longrun.errors import ContextOverflow
from longrun.models import (
    Approval,
    ContextPolicy,
    Effect,
    EffectStatus,
    Message,
    NextAction,
    Projection,
    TaskState,
    ToolSpec,
    TranscriptItem,
)
from tests.fake_anthropic import validate_tool_pairing

NOW = datetime(2026, 1, 1, tzinfo=UTC)
STATE = TaskState(run_id="r1", state_version=4, objective="Find the bug in the parser",
                  constraints=["Never modify tests/", "Ask before running migrations"])
BIG = "def parse(x):\n    return x + 1  # parser line\n" * 300  # about 4k tokens


def transcript(n_tools: int, *, size: str = BIG, tools: tuple[str, ...] = ("read_file",)) -> list[TranscriptItem]:
    wire: list[dict[str, Any]] = [{"role": "user", "content": "Please find the parser bug; keep it small."}]
    for i in range(n_tools):
        tool = tools[i % len(tools)]
        wire.append({"role": "assistant", "content": [
            {"type": "text", "text": f"Reading file {i}."},
            {"type": "tool_use", "id": f"tu{i}", "name": tool, "input": {"path": f"src/m{i}.py"}}]})
        wire.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"tu{i}", "content": f"#{i}\n" + size}]})
    wire.append({"role": "assistant", "content": [{"type": "text", "text": "Done reading."}]})
    return [TranscriptItem(seq=i + 1, message=Message.from_wire(m)) for i, m in enumerate(wire)]


def run(items: list[TranscriptItem], policy: ContextPolicy, **kw: Any) -> Projection:
    kw.setdefault("trigger", "threshold")
    return compact(items, previous=kw.pop("previous", None), state=kw.pop("state", STATE), policy=policy,
                   window=kw.pop("window", 200_000), calibration=kw.pop("calibration", Calibration()), **kw)


def cleared_ids(p: Projection) -> set[str]:
    return {c["tool_use_id"] for c in cleared_references(p.messages)}


# --- stage 1 parameters ------------------------------------------------------------------------

def results(p: Projection) -> dict[str, bool]:
    """tool_use_id -> cleared? for every result still in the projection."""
    return {b.tool_use_id: bool((b.model_extra or {}).get("longrun_cleared")) for m in p.messages for b in m.tool_results()}


def test_keep_protects_newest_tool_uses() -> None:
    p = run(transcript(10), ContextPolicy(trigger=60_000, keep=4, clear_at_least=0))
    seen = results(p)
    assert "summarize" not in p.report.stages_run
    cleared = [i for i in range(10) if seen[f"tu{i}"]]
    assert cleared and cleared == list(range(len(cleared)))  # oldest first
    assert all(not seen[f"tu{i}"] for i in range(6, 10))
    # forced (stage boundary): every eligible result goes, still never the newest `keep`
    forced = run(transcript(10), ContextPolicy(trigger=200_000, keep=4, clear_at_least=0, tail_tokens=100_000),
                 force=True, trigger="stage_boundary")
    assert results(forced) == {f"tu{i}": i < 6 for i in range(10)}


def test_exclude_tools_never_cleared() -> None:
    items = transcript(10, tools=("read_file", "grep"))
    p = run(items, ContextPolicy(trigger=70_000, keep=0, clear_at_least=0, exclude_tools=["grep"]))
    assert "summarize" not in p.report.stages_run
    seen = results(p)
    assert any(seen.values()) and not any(seen[f"tu{i}"] for i in range(1, 10, 2))


def test_clear_at_least_blocks_small_clears() -> None:
    items = transcript(4)  # 3 clearable results of ~4k tokens
    blocked = run(items, ContextPolicy(trigger=10_000, keep=1, clear_at_least=50_000))
    assert not cleared_ids(blocked) and blocked.report.freed_per_stage["microcompact"] == 0
    allowed = run(items, ContextPolicy(trigger=14_000, keep=1, clear_at_least=5_000))
    assert cleared_ids(allowed) == {"tu0", "tu1", "tu2"} and "summarize" not in allowed.report.stages_run


def test_cleared_result_names_tool_input_and_artifact() -> None:
    items = transcript(5)
    items[2].message.content[0].__pydantic_extra__["longrun_artifact"] = "a" * 64  # type: ignore[index]
    p = run(items, ContextPolicy(trigger=20_000, keep=1, clear_at_least=0))
    assert "summarize" not in p.report.stages_run
    req = render_request(model="m", system="s", projection=p, new_items=items, state=STATE, tools=[], max_tokens=100)
    first = req.messages[2].content[0]
    assert first.type == "tool_result"
    assert "read_file" in first.content and "src/m0.py" in first.content and "read_artifact" in first.content
    assert '"sha256": "' + "a" * 12 + '"' in first.content  # the artifact the tool activity recorded, 12-digit prefix
    assert "longrun_" not in str(req.model_dump())


def test_lossy_stage_only_when_cheap_stages_miss_target() -> None:
    items = transcript(12)
    p = run(items, ContextPolicy(trigger=40_000, keep=2, clear_at_least=0))
    assert "microcompact" in p.report.stages_run and "summarize" not in p.report.stages_run
    assert p.report.tokens_after_estimated <= 20_000 and p.summary is None
    tight = run(items, ContextPolicy(trigger=3_000, keep=2, clear_at_least=0, tail_tokens=1_000))
    assert "summarize" in tight.report.stages_run and tight.summary


def test_noop_when_nothing_to_do() -> None:
    p = run(transcript(1, size="short"), ContextPolicy())
    assert p.report.outcome == "noop" and p.report.stages_run == ["trim"]


def test_stage0_trims_seen_huge_results_but_not_the_open_cycle() -> None:
    huge = "payload " * 20_000
    items = transcript(2, size=huge)[:-1]  # ends with the newest tool result, not yet seen
    # a trigger whose target (60k) the trimmed request (about 52k) meets: stage 0 alone is enough
    p = run(items, ContextPolicy(artifact_trim_tokens=1_000, trigger=120_000))
    assert p.report.stages_run == ["trim"]
    refs = cleared_references(p.messages)
    assert [r["tool_use_id"] for r in refs] == ["tu0"] and refs[0]["stage"] == "trim"
    assert huge in p.messages[-1].content[0].content  # type: ignore[union-attr]


# --- summaries ----------------------------------------------------------------------------------

class FixedSummarizer:
    def __init__(self, text: str) -> None:
        self.text = text
        self.calls: list[str | None] = []

    def summarize(self, messages: list[Message], previous_summary: str | None, state: TaskState, max_tokens: int) -> str:
        self.calls.append(previous_summary)
        return self.text


TIGHT = ContextPolicy(trigger=3_000, keep=1, clear_at_least=0, tail_tokens=500)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("## Goal\n" + "words and more words " * 20_000, "not smaller"),
        ("## Progress\n- Alice approved the migration.", "approval"),
        ("## Next step\nnext_action: edit", "next_action"),
        ("## Facts\n- effect act-1 confirmed at the target", "act-1"),
    ],
)
def test_bad_summaries_fall_back_to_extractive(text: str, reason: str) -> None:
    state = STATE.model_copy(update={"effects": [Effect(action_id="act-1", tool="write_file", status=EffectStatus.unknown,
                                                           idempotency_key="act-1")]})
    p = run(transcript(10), TIGHT, state=state, summarizer=FixedSummarizer(text))
    assert p.report.outcome == "summary_rejected"
    assert p.report.summary_source == "extractive"
    assert reason in (p.report.summary_rejected_reason or "")
    assert p.summary and "## Goal\nFind the bug in the parser" in p.summary


def test_good_model_summary_is_used_and_previous_folded() -> None:
    s = FixedSummarizer("## Goal\nparser bug\n## Progress\n- read files\n## Facts\n- m0 has the bug\n## Decisions\n- none\n## Next step\n- inspect")
    p1 = run(transcript(10), TIGHT, summarizer=s)
    assert p1.report.outcome == "applied" and p1.report.summary_source == "model"
    assert s.calls == [None]
    # the human's words are kept verbatim beside any model summary
    assert "Please find the parser bug; keep it small." in (p1.summary or "")
    items = transcript(14)
    p2 = run(items, TIGHT, previous=p1, summarizer=s)
    assert s.calls[1] is not None and s.calls[1].startswith("## Goal\nparser bug")
    assert "Please find the parser bug; keep it small." in (p2.summary or "")


def test_the_offline_summarizer_is_reported_as_extractive_not_as_a_model() -> None:
    p = run(transcript(10), TIGHT, summarizer=ExtractiveSummarizer())
    assert p.report.outcome == "applied" and p.report.summary_source == "extractive"


def test_validate_summary_accepts_consistent_claims() -> None:
    state = STATE.model_copy(update={"next_action": NextAction.test, "approvals": [Approval(
        id="ap1", scope="run_command", action_hash="b" * 64, approved_by="alice", approved_at=NOW,
        expires_at=NOW + timedelta(hours=1))]})
    assert validate_summary("Alice approved running the migration; next action: test.", 10_000, state) is None
    assert validate_summary("The migration is not approved yet.", 10_000, STATE) is None
    assert validate_summary("Next action: test.", 10_000, STATE) is not None


def test_extractive_summary_sections_and_facts() -> None:
    msgs = [it.message for it in transcript(3)]
    text = ExtractiveSummarizer().summarize(msgs, None, STATE, 2_000)
    for section in ("## Goal", "## Progress", "## Facts", "## Decisions", "## Next step"):
        assert section in text
    assert validate_summary(text, 100_000, STATE) is None
    # the calls themselves (paths, artifacts) are in the results index that compact adds
    p = run(transcript(12), ContextPolicy(trigger=3_000, keep=2, clear_at_least=0, tail_tokens=1_000))
    assert p.summary and "## Earlier tool results" in p.summary
    assert "- sha256:" in p.summary and " read_file src/m0.py" in p.summary and " read_file src/m2.py" in p.summary


# --- triggers ---------------------------------------------------------------------------------------

def test_should_compact_triggers() -> None:
    pol = ContextPolicy(trigger=50_000)
    assert should_compact(10_000, policy=pol, window=200_000, last_compaction_turn=None, turn=5) is None
    assert should_compact(60_000, policy=pol, window=200_000, last_compaction_turn=None, turn=5) == "threshold"
    assert should_compact(60_000, policy=pol, window=200_000, last_compaction_turn=4, turn=5) is None
    assert should_compact(195_000, policy=pol, window=200_000, last_compaction_turn=4, turn=5) == "threshold"
    assert should_compact(1_000, policy=pol, window=200_000, last_compaction_turn=None, turn=5, stage_boundary=True) == "stage_boundary"
    assert should_compact(1_000, policy=pol, window=200_000, last_compaction_turn=4, turn=5, operator=True) == "operator"


# --- rendering -----------------------------------------------------------------------------------

TOOLS = [ToolSpec(name="read_file", description="read", input_schema={"type": "object"})]


def test_two_turns_without_compaction_share_a_byte_identical_prefix() -> None:
    items = transcript(6)
    p = run(items[:9], TIGHT)
    assert p.summary
    r1 = render_request(model="m", system="sys", projection=p, new_items=items[:11], state=STATE, tools=TOOLS, max_tokens=10)
    state2 = STATE.model_copy(update={"state_version": 5, "notes": ["a new note"]})
    r2 = render_request(model="m", system="sys", projection=p, new_items=items, state=state2, tools=TOOLS, max_tokens=10)
    j1 = r1.model_dump_json(exclude={"messages"}) + "".join(m.model_dump_json() for m in r1.messages)
    j2 = r2.model_dump_json(exclude={"messages"}) + "".join(m.model_dump_json() for m in r2.messages)
    # everything but the state block of r1 is a byte-identical prefix of r2
    w1 = [m.to_wire() for m in r1.messages]
    w1[-1]["content"] = w1[-1]["content"][:-1]
    w2 = [m.to_wire() for m in r2.messages]
    assert w2[: len(w1) - 1] == w1[:-1]
    assert w2[len(w1) - 1]["content"][: len(w1[-1]["content"])] == w1[-1]["content"]
    assert j2.startswith(r1.model_dump_json(exclude={"messages"}))
    assert j1 != j2
    first = r2.messages[0].content[0]
    assert first.type == "text" and first.text.startswith("<summary_of_earlier_work>")


def test_state_block_is_last_even_after_an_assistant_message() -> None:
    items = transcript(1)
    req = render_request(model="m", system="", projection=None, new_items=items, state=STATE, tools=[], max_tokens=10)
    assert req.messages[-1].role == "user" and "<task_state>" in req.messages[-1].content[-1].text  # type: ignore[union-attr]
    req2 = render_request(model="m", system="", projection=None, new_items=items[:-1], state=STATE, tools=[], max_tokens=10)
    last = req2.messages[-1]
    assert [b.type for b in last.content] == ["tool_result", "text"]


def test_fit_request_drops_whole_pairs_and_keeps_summary_and_state() -> None:
    items = transcript(12)
    p = run(items[:7], TIGHT)
    req = render_request(model="m", system="sys", projection=p, new_items=items, state=STATE, tools=TOOLS, max_tokens=10)
    before = estimate_request(req)
    fitted, freed = fit_request(req, limit=12_000, calibration=Calibration(), keep_min_tail_turns=2)
    assert freed > 0 and estimate_request(fitted) <= 12_000 < before
    assert validate_tool_pairing([m.to_wire() for m in fitted.messages]) is None
    assert fitted.messages[0].content[0].text.startswith("<summary_of_earlier_work>")  # type: ignore[union-attr]
    assert "<task_state>" in fitted.messages[-1].content[-1].text  # type: ignore[union-attr]
    same, zero = fit_request(fitted, limit=12_000, calibration=Calibration(), keep_min_tail_turns=2)
    assert zero == 0 and same is fitted


def test_fit_request_calibration_counts() -> None:
    req = render_request(model="m", system="", projection=None, new_items=transcript(6), state=STATE, tools=[], max_tokens=10)
    est = estimate_request(req)
    fitted, _ = fit_request(req, limit=est, calibration=Calibration(ratio=1.5, samples=2), keep_min_tail_turns=1)
    assert Calibration(ratio=1.5).apply(estimate_request(fitted)) <= est


def test_fit_request_raises_when_state_alone_overflows() -> None:
    req = render_request(model="m", system="x " * 5_000, projection=None, new_items=transcript(1), state=STATE, tools=[], max_tokens=10)
    with pytest.raises(ContextOverflow):
        fit_request(req, limit=1_000, calibration=Calibration(), keep_min_tail_turns=1)


def test_a_summary_that_would_not_shrink_the_request_is_undone() -> None:
    """Summarizing a few short turns can cost more than it saves (the summary carries the
    verbatim user messages and the results index): then compaction leaves the view alone."""
    items = transcript(1, size="x = 1\n")
    p = run(items, ContextPolicy(trigger=500, keep=0, clear_at_least=0, tail_tokens=0, min_tail_turns=1), force=True)
    assert "summarize" not in p.report.stages_run and p.summary is None
    assert p.report.tokens_after_estimated <= p.report.tokens_before_estimated
