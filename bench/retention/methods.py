"""The four ways a conversation is brought to a budget, each returning the messages as sent.

- `none`: the transcript itself (the control: it must keep every probe, else the generator or
  the scorer is wrong).
- `naive`: the newest whole messages that fit the budget, starting at a user text message so no
  tool pair is split, plus the state block (rendered by `render_request`): the floor.
- `extractive`: exactly `longrun compact TRANSCRIPT.jsonl --state STATE.json --budget B --json`
  (in-process through `compact_cmd.build`; a test checks the real CLI gives the same).
- `folded`: the extractive pipeline over the conversation arriving in five slices, each folded
  into the previous projection with the run's fact store carried (`compact(..., previous=...,
  facts=...)`), as a run's compactions fold it; what a fold loses, this shows.
- `model`: the same pipeline with `ModelSummarizer` over the real Anthropic adapter against the
  local fake server, whose policy is `fake_model.policy` (a deterministic stand-in, not an LLM).
  `project()` mirrors `compact_cmd.build` around `compact` (load, policy, render_request,
  fit_request) so the two modes differ only in the summarizer; a test checks that `project()`
  without a summarizer equals `build`.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.retention import fake_model
from bench.retention.generate import Conversation
from longrun.cli import compact_cmd
from longrun.context import Calibration, compact, estimate_request, fit_request, render_request
from longrun.context.summary import Summarizer
from longrun.models.context import FactRow, Projection, TranscriptItem
from longrun.models.provider import ModelRequest
from longrun.models.spec import ContextPolicy
from longrun.models.state import TaskState

METHODS = ("none", "naive", "extractive", "model", "folded")
FAKE_KEY = "sk-ant-fake-retention-bench"
FAKE_MODEL = "anthropic:claude-sonnet-4-6"


@dataclass
class Output:
    messages: list[dict[str, Any]]
    tokens: int
    summary_source: str = "none"
    rejected: str | None = None


def write_inputs(conv: Conversation, directory: Path) -> tuple[Path, Path]:
    """TRANSCRIPT.jsonl and STATE.json of a conversation, as `longrun compact` reads them."""
    directory.mkdir(parents=True, exist_ok=True)
    transcript, state = directory / "transcript.jsonl", directory / "state.json"
    transcript.write_text(conv.jsonl(), encoding="utf-8")
    state.write_text(json.dumps(conv.state(), ensure_ascii=False, indent=1), encoding="utf-8")
    return transcript, state


def cli_args(transcript: Path, state: Path, budget: int) -> argparse.Namespace:
    """The namespace `longrun compact TRANSCRIPT --state STATE --budget B --json` parses to."""
    return argparse.Namespace(transcript=str(transcript), state=str(state), budget=budget, keep=None,
                              clear_at_least=None, exclude_tools="", json=True)


def none(conv: Conversation) -> Output:
    return Output(list(conv.messages), conv.tokens)


def naive(conv: Conversation, transcript: Path, state_path: Path, budget: int) -> Output:
    items = compact_cmd.load_transcript(transcript)
    state = compact_cmd.load_state(str(state_path), items)
    starts = [i for i, it in enumerate(items)
              if it.message.role == "user" and not it.message.tool_results()]

    def sent(start: int | None) -> tuple[list[dict[str, Any]], int]:
        request = render_request(model="offline", system="", projection=None,
                                 new_items=items[start:] if start is not None else [], state=state, tools=[],
                                 max_tokens=8192)
        return [m.to_wire() for m in request.messages], estimate_request(request)

    lo, hi = 0, len(starts)  # the earliest start that fits: tokens fall as the start moves later
    while lo < hi:
        mid = (lo + hi) // 2
        if sent(starts[mid])[1] <= budget:
            hi = mid
        else:
            lo = mid + 1
    messages, tokens = sent(starts[lo] if lo < len(starts) else None)
    return Output(messages, tokens)


def extractive(transcript: Path, state_path: Path, budget: int) -> Output:
    out = compact_cmd.build(cli_args(transcript, state_path, budget))
    report = out["report"]
    return Output(out["messages"], int(report["tokens_sent_estimated"]), str(report.get("summary_source")),
                  report.get("summary_rejected_reason"))


def _inputs(transcript: Path, state_path: Path, budget: int) -> tuple[list[TranscriptItem], TaskState, ContextPolicy, int]:
    """(items, state, policy, window) as `longrun compact TRANSCRIPT --state STATE --budget B` builds them."""
    items: list[TranscriptItem] = compact_cmd.load_transcript(transcript)
    state = compact_cmd.load_state(str(state_path), items)
    probe = ContextPolicy()
    policy = ContextPolicy(budget=budget, trigger=max(500, budget), target_ratio=compact_cmd.OFFLINE_TARGET_RATIO)
    return items, state, policy, budget + probe.reserve_output + probe.headroom


def _sent(projection: Projection | None, items: list[TranscriptItem], state: TaskState, policy: ContextPolicy,
          window: int, calibration: Calibration) -> ModelRequest:
    """The request after `projection`, rendered and fitted as `longrun compact` sends it."""
    request = render_request(model="offline", system="", projection=projection, new_items=items, state=state,
                             tools=[], max_tokens=policy.reserve_output)
    return fit_request(request, limit=policy.limit(window), calibration=calibration,
                       keep_min_tail_turns=policy.min_tail_turns)[0]


def project(transcript: Path, state_path: Path, budget: int, summarizer: Summarizer | None) -> dict[str, Any]:
    """`compact_cmd.build` for `--budget B` with a summarizer passed to `compact`."""
    items, state, policy, window = _inputs(transcript, state_path, budget)
    calibration = Calibration()
    projection = compact(items, previous=None, state=state, policy=policy, window=window, trigger="offline",
                         calibration=calibration, summarizer=summarizer)
    request = _sent(projection, items, state, policy, window, calibration)
    report = projection.report.model_dump(mode="json")
    report["tokens_sent_estimated"] = estimate_request(request)
    return {"messages": [m.to_wire() for m in request.messages], "report": report}


FOLDS = 5
"""Slices of a conversation in the `folded` method: the first compaction and four folds."""


def folded(transcript: Path, state_path: Path, budget: int, folds: int = FOLDS) -> Output:
    """The conversation arriving in `folds` slices, each folded into the previous projection as a
    run's compactions fold it (`compact(items, previous=..., facts=rows)`, forced: `longrun
    compact-now`), the fact store carried from one to the next as its table would hold it; then
    the request as sent after the last. A slice ends before a human's text message, so no tool
    pair is split."""
    items, state, policy, window = _inputs(transcript, state_path, budget)
    calibration = Calibration()
    starts = [i for i, it in enumerate(items) if it.message.role == "user" and not it.message.tool_results()]
    ends = sorted({next((s for s in starts if s >= len(items) * k // folds), len(items)) for k in range(1, folds)})
    previous: Projection | None = None
    rows: list[FactRow] = []
    sources: list[str] = []
    for end in [*ends, len(items)]:
        projection = compact(items[:end], previous=previous, state=state, policy=policy, window=window,
                             trigger="operator", calibration=calibration, force=True, facts=rows)
        if projection.report.outcome != "noop":
            previous, rows = projection, rows + projection.new_facts
            sources.append(str(projection.report.summary_source))
    request = _sent(previous, items, state, policy, window, calibration)
    return Output([m.to_wire() for m in request.messages], estimate_request(request), sources[-1] if sources else "none")


@contextmanager
def fake_model_summarizer() -> Iterator[Summarizer]:
    """A `ModelSummarizer` on the real Anthropic adapter, talking to a local fake server whose
    policy is the deterministic stand-in in `fake_model`."""
    from longrun.providers import ModelSummarizer, get_provider
    from tests.fake_anthropic import FakeAnthropic

    with FakeAnthropic() as fake:
        fake.set_policy(fake_model.policy)
        provider = get_provider(FAKE_MODEL, api_key=FAKE_KEY, base_url=fake.url)
        try:
            yield ModelSummarizer(provider)
        finally:
            provider.close()  # type: ignore[attr-defined]


def model(transcript: Path, state_path: Path, budget: int, summarizer: Summarizer) -> Output:
    out = project(transcript, state_path, budget, summarizer)
    report = out["report"]
    return Output(out["messages"], int(report["tokens_sent_estimated"]), str(report.get("summary_source")),
                  report.get("summary_rejected_reason"))
