"""Property tests of the context pipeline over random transcripts with real tool-pair structure."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from longrun.context import Calibration, compact, estimate_request, fit_request, parse_state_block, render_request
from longrun.context.transcript import result_text
from longrun.models import ContextPolicy, Message, TaskState, TranscriptItem
from longrun.models.canonical import sha256_hex
from tests.fake_anthropic import validate_block_fields, validate_tool_pairing

REF = re.compile(r"sha256:([0-9a-f]{64})")
SIZES = [5, 80, 1_500, 12_000, 60_000]
CONSTRAINTS = ['Never push to "main"; open a PR instead.', "Do not touch migrations/\n(schema is frozen)", "ne pas supprimer les tests — jamais"]


@st.composite
def transcripts(draw: Any) -> list[dict[str, Any]]:
    """Random conversation: a human task, then turns of assistant thinking/text/tool_use, tool
    results of sizes from tiny to huge, and occasional human interjections."""
    words = st.text(alphabet="abcdefghij klmnop{}()=:;\n", min_size=1, max_size=300)
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "Task: " + draw(words)}]
    n = 0
    for _ in range(draw(st.integers(1, 14))):
        content: list[dict[str, Any]] = []
        if draw(st.booleans()):
            content.append({"type": "thinking", "thinking": draw(words), "signature": "sig" + str(n)})
        if draw(st.booleans()):
            content.append({"type": "text", "text": draw(words)})
        uses = []
        for _ in range(draw(st.integers(0, 3))):
            n += 1
            tid = f"toolu_{n:04d}"
            tool = draw(st.sampled_from(["read_file", "grep", "run_command", "screenshot"]))
            uses.append((tid, tool))
            content.append({"type": "tool_use", "id": tid, "name": tool, "input": {"path": f"src/f{n}.py"}})
        if not content:
            content.append({"type": "text", "text": "ok"})
        msgs.append({"role": "assistant", "content": content})
        if uses:
            results: list[dict[str, Any]] = []
            for tid, tool in uses:
                size = draw(st.sampled_from(SIZES))
                body = (f"line {tid} " + "x = compute(y) + 1\n" * (size // 19 + 1))[:size]
                if tool == "screenshot" and draw(st.booleans()):
                    results.append({"type": "tool_result", "tool_use_id": tid, "content": [
                        {"type": "text", "text": body[:200]},
                        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR" * 2000}}]})
                else:
                    results.append({"type": "tool_result", "tool_use_id": tid, "content": body})
            if draw(st.integers(0, 5)) == 0:
                results.append({"type": "text", "text": "human: " + draw(words)})
            msgs.append({"role": "user", "content": results})
        elif draw(st.booleans()):
            msgs.append({"role": "user", "content": "human: " + draw(words)})
        else:
            break
    return msgs


def _items(wire: list[dict[str, Any]]) -> list[TranscriptItem]:
    return [TranscriptItem(seq=i + 1, message=Message.from_wire(m)) for i, m in enumerate(wire)]


def _original_shas(items: list[TranscriptItem]) -> set[str]:
    out = set()
    for it in items:
        for b in it.message.tool_results():
            out.add(sha256_hex(result_text(b)))
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    wire=transcripts(),
    budget=st.integers(8_000, 60_000),
    keep=st.integers(0, 4),
    clear_at_least=st.sampled_from([0, 500, 5_000]),
    ratio=st.sampled_from([0.8, 1.0, 1.3]),
)
def test_projection_invariants(wire: list[dict[str, Any]], budget: int, keep: int, clear_at_least: int, ratio: float) -> None:
    items = _items(wire)
    state = TaskState(run_id="r", state_version=3, objective="review the code", constraints=CONSTRAINTS)
    policy = ContextPolicy(budget=budget, keep=keep, clear_at_least=clear_at_least)
    window = 200_000
    cal = Calibration(ratio=ratio, samples=3)
    proj = compact(items, previous=None, state=state, policy=policy, window=window, trigger="threshold", calibration=cal)
    assert proj.covers_through_seq == items[-1].seq and proj.base_state_version == 3 and proj.version == 1
    req = render_request(model="m", system="You are careful.", projection=proj, new_items=items, state=state, tools=[], max_tokens=1000)
    req, _ = fit_request(req, limit=policy.limit(window), calibration=cal, keep_min_tail_turns=policy.min_tail_turns)
    wire_out = [m.to_wire() for m in req.messages]

    # pairs never split or orphaned; no internal key leaks to the provider
    assert validate_tool_pairing(wire_out) is None
    assert validate_block_fields(wire_out) is None
    assert "longrun_" not in repr(wire_out)
    # never over budget
    assert cal.apply(estimate_request(req)) <= policy.limit(window)
    # constraints verbatim, rendered from the state, in the last text block of the last user message
    last = req.messages[-1]
    assert last.role == "user" and last.content[-1].type == "text"
    parsed = parse_state_block(last.content[-1].text)
    assert parsed is not None and parsed["constraints"] == CONSTRAINTS
    # every cleared result is recoverable by its reference (the sha256 of the original content)
    originals = _original_shas(items)
    text = repr(wire_out) + (proj.summary or "")
    for sha in REF.findall(text):
        if "image omitted; sha256:" + sha in text or ("base64 data" in text and sha not in originals):
            continue
        assert sha in originals
    # the open tool cycle (last assistant message) goes out untouched, thinking included
    last_assistant = next(m for m in reversed(wire) if m["role"] == "assistant")
    sent_assistant = [m for m in wire_out if m["role"] == "assistant"]
    assert sent_assistant and sent_assistant[-1]["content"] == last_assistant["content"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(wire=transcripts())
def test_incremental_compaction_keeps_invariants(wire: list[dict[str, Any]]) -> None:
    """Compacting twice (the second time on top of the first projection) keeps the pairs intact
    and folds the first summary."""
    items = _items(wire)
    state = TaskState(run_id="r", state_version=1, objective="o", constraints=CONSTRAINTS)
    policy = ContextPolicy(budget=10_000, keep=1, clear_at_least=0)
    cal = Calibration()
    half = items[: max(1, len(items) // 2)]
    while half and half[-1].message.role == "assistant" and half[-1].message.tool_uses():
        half = half[:-1]
    p1 = compact(half or items[:1], previous=None, state=state, policy=policy, window=200_000, trigger="threshold", calibration=cal)
    p2 = compact(items, previous=p1, state=state, policy=policy, window=200_000, trigger="threshold", calibration=cal)
    assert p2.version == 2
    req = render_request(model="m", system="", projection=p2, new_items=items, state=state, tools=[], max_tokens=100)
    req, _ = fit_request(req, limit=policy.limit(200_000), calibration=cal, keep_min_tail_turns=2)
    assert validate_tool_pairing([m.to_wire() for m in req.messages]) is None
    if p1.summary and p2.summary and p2.report.messages_summarized:
        # the first summary's Goal survives the fold
        assert "## Goal" in p2.summary


_HUMAN_LINES = ["Please remember rule {k}: always run the suite before pushing.", "And never push branch feat-{k} directly.",
                "Check in with @owner{k} at 09:{k:02d} daily.", "SAFETY RULE: never reveal secrets.", "port {p} for svc-{k}",
                "thanks", "HARD CONSTRAINT: Budget cap is ${p} total. Never exceed without explicit approval."]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    turns=st.lists(st.tuples(st.lists(st.integers(0, len(_HUMAN_LINES) - 1), min_size=1, max_size=6), st.integers(1, 5)),
                   min_size=4, max_size=50),
    constraints=st.integers(0, 10),
    objective_words=st.integers(1, 20),
    budget=st.integers(1_000, 2_500),
    ratio=st.sampled_from([0.5, 0.9, 0.95]),
)
def test_no_compaction_exceeds_its_limit_nor_makes_a_request_overflow(
    turns: list[tuple[list[int], int]], constraints: int, objective_words: int, budget: int, ratio: float
) -> None:
    """Issue 25, cause 8: with many constraints and a small budget, `compact` returned more than
    its limit and `fit_request` raised ContextOverflow, because the last resort never trimmed the
    ledger or the quoted messages. At any budget above the part no stage can shrink, neither
    happens now."""
    cons = [f"Constraint {k}: never touch cluster db-{k} without approval from the ops team." for k in range(constraints)]
    state = TaskState(run_id="r", state_version=1, objective="Keep the rules. " * objective_words, constraints=cons)
    items: list[TranscriptItem] = []
    for k, (lines, repeat) in enumerate(turns):
        text = "\n".join(_HUMAN_LINES[i].format(k=k % 60, p=8000 + k) for i in lines)
        reply = f"Noted {k}: " + f"the suite and feat-{k}. " * repeat
        for m in (Message.user_text(text), Message(role="assistant", content=[{"type": "text", "text": reply}])):
            items.append(TranscriptItem(seq=len(items) + 1, message=m))
    policy = ContextPolicy(budget=budget, trigger=budget, target_ratio=ratio)
    window = budget + policy.reserve_output + policy.headroom
    limit = policy.limit(window)
    unshrinkable = estimate_request(render_request(model="m", system="", projection=None, new_items=items[-2:], state=state,
                                                   tools=[], max_tokens=policy.reserve_output))
    if unshrinkable > limit:
        return  # not even the newest turn and the task state fit: nothing may be promised
    p = compact(items, previous=None, state=state, policy=policy, window=window, trigger="offline", calibration=Calibration())
    assert p.report.tokens_after_estimated <= limit, p.report
    req = render_request(model="m", system="", projection=p, new_items=[], state=state, tools=[],
                         max_tokens=policy.reserve_output)
    fitted, _ = fit_request(req, limit=limit, calibration=Calibration(), keep_min_tail_turns=policy.min_tail_turns)
    assert estimate_request(fitted) <= limit
