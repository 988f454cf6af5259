"""Token estimation: fast, per content type, calibrated per run against the provider's counts.

Real sessions run at about 2.8 characters per token (1.4 to 3.5): code and JSON are denser than
prose. The estimator classifies a sample of each text with C-speed regex counts and divides by a
per-class ratio; `Calibration` then scales it by what the provider reported for earlier requests.

The ratios and overheads were fitted (least squares on relative error) to the request-to-request
deltas of the five real sessions in ../shared/data/real-sessions; their sum is within 1-2% on
three of them and 11-17% low on the other two, which is why per-run calibration exists. (Richer
features - word, digit, punctuation and newline counts - fitted no better across sessions: one
session stays 13-19% low whatever the features, so the correction has to come from the run.)
`python -m bench.run` (BENCHMARKS.md) and `tests/test_context_real_sessions.py` print the figures.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict

from longrun.context.memo import text_memo
from longrun.models.blocks import (
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from longrun.models.provider import ModelRequest

CHARS_PER_TOKEN = {"prose": 3.15, "code": 2.9, "json": 2.75, "dense": 2.55, "base64": 1.4}
MESSAGE_OVERHEAD = 3
BLOCK_OVERHEAD = 11
TOOL_BLOCK_OVERHEAD = 30
"""Extra tokens per tool_use / tool_result block (ids, names, wrapping), fitted on real sessions."""
IMAGE_TOKENS = 1_600
DECAY = 0.9
"""Weight left to an observation of `Calibration` after each newer one (memory of about ten)."""
REQUEST_OVERHEAD = 8

_SAMPLE = 2_000
_SYMBOLS = re.compile(r"[{}\[\]():;=<>\"'`,_/\\|*&^%$#@!+\-]")
_WS = re.compile(r"\s")
_BASE64 = re.compile(r"[A-Za-z0-9+/]{200,}={0,2}")


def classify(text: str) -> str:
    """Cheap content class of `text` from a sample: prose, code, json, dense or base64."""
    sample = text[:_SAMPLE]
    if not sample:
        return "prose"
    n = len(sample)
    symbols = len(_SYMBOLS.findall(sample))
    spaces = len(_WS.findall(sample))
    if spaces / n < 0.02 and _BASE64.search(sample):
        return "base64"
    if sample.lstrip()[:1] in "{[" and symbols / n > 0.08:
        return "json"
    if spaces / n < 0.05:
        return "dense"
    if symbols / n > 0.06 or "\n    " in sample or "def " in sample or "function " in sample:
        return "code"
    return "prose"


@text_memo(2_000_000)
def estimate_text(text: str) -> int:
    """Estimated tokens of one text. Cached: the same strings are estimated every turn (bounded
    by the characters it holds, so a worker's memory does not grow with a run: `memo.py`)."""
    if not text:
        return 0
    return max(1, round(len(text) / CHARS_PER_TOKEN[classify(text)]))


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _dict_block_tokens(data: dict[str, Any]) -> int:
    kind = data.get("type")
    if kind == "text":
        return BLOCK_OVERHEAD + estimate_text(str(data.get("text", "")))
    if kind == "thinking":
        return BLOCK_OVERHEAD + estimate_text(str(data.get("thinking", "")))
    if kind == "redacted_thinking":
        return BLOCK_OVERHEAD + len(str(data.get("data", ""))) // 4
    if kind == "image":
        return IMAGE_TOKENS
    if kind == "tool_use":
        return (BLOCK_OVERHEAD + TOOL_BLOCK_OVERHEAD + estimate_text(str(data.get("name", "")))
                + estimate_text(_json_text(data.get("input", {}))))
    if kind == "tool_result":
        content = data.get("content", "")
        if isinstance(content, str):
            return BLOCK_OVERHEAD + TOOL_BLOCK_OVERHEAD + estimate_text(content)
        return BLOCK_OVERHEAD + TOOL_BLOCK_OVERHEAD + sum(_dict_block_tokens(c) for c in content)
    return BLOCK_OVERHEAD + estimate_text(_json_text(data))


def estimate_block(block: Any) -> int:
    """Estimated tokens of one content block (typed or a wire dict). Internal `longrun_*` keys
    are never sent, so they are never counted."""
    if isinstance(block, dict):
        return _dict_block_tokens(block)
    if isinstance(block, TextBlock):
        return BLOCK_OVERHEAD + estimate_text(block.text)
    if isinstance(block, ThinkingBlock):
        return BLOCK_OVERHEAD + estimate_text(block.thinking)
    if isinstance(block, ToolUseBlock):
        return BLOCK_OVERHEAD + TOOL_BLOCK_OVERHEAD + estimate_text(block.name) + estimate_text(_json_text(block.input))
    if isinstance(block, ToolResultBlock):
        content = block.content
        if isinstance(content, str):
            return BLOCK_OVERHEAD + TOOL_BLOCK_OVERHEAD + estimate_text(content)
        return BLOCK_OVERHEAD + TOOL_BLOCK_OVERHEAD + sum(_dict_block_tokens(c) for c in content)
    if isinstance(block, ImageBlock):
        return IMAGE_TOKENS
    if isinstance(block, RedactedThinkingBlock):
        return BLOCK_OVERHEAD + len(block.data) // 4
    return _dict_block_tokens(block.model_dump(mode="json", exclude_none=True))


def estimate_message(message: Message | dict[str, Any]) -> int:
    """Estimated tokens of one message (typed or wire form, string content allowed)."""
    blocks = message.content if isinstance(message, Message) else message.get("content", [])
    if isinstance(blocks, str):
        return MESSAGE_OVERHEAD + BLOCK_OVERHEAD + estimate_text(blocks)
    return MESSAGE_OVERHEAD + sum(estimate_block(b) for b in blocks)


def estimate_messages(messages: Iterable[Message | dict[str, Any]]) -> int:
    return sum(estimate_message(m) for m in messages)


def estimate_tools(tools: Iterable[Any]) -> int:
    return sum(estimate_text(_json_text(t.model_dump() if hasattr(t, "model_dump") else t)) for t in tools)


def estimate_request(request: ModelRequest) -> int:
    """Estimated input tokens of a whole request: system, tools and messages."""
    return (estimate_text(request.system) + estimate_tools(request.tools)
            + estimate_messages(request.messages) + REQUEST_OVERHEAD)


class Calibration(BaseModel):
    """Per-run correction factor: provider-reported input tokens / our estimate, token-weighted.

    The ratio is `actual_sum / estimated_sum` over the observations so far, each older
    observation's weight multiplied by `DECAY` per new one. Token-weighted, because what a
    trigger or a budget needs right is the sum: a per-request mean of ratios lets many small,
    noisy requests (a short prose turn scatters by 10-30%) outvote the few large ones that hold
    most of the tokens (on the real sessions' deltas that mean left 4-11% of the sum
    uncorrected; the token-weighted ratio leaves 0.4-4.6%). The decay still follows a drift in
    content (prose turning into logs) within about ten requests. For whole-request totals, as a run
    reports them, each observation is already a sum over the conversation, so the ratio is in
    effect the latest requests' own. Observations are clamped to [0.25, 4] so that a bogus
    report cannot poison a run; zero or negative reports are ignored."""

    model_config = ConfigDict(extra="forbid")

    ratio: float = 1.0
    samples: int = 0
    estimated_sum: float = 0.0
    actual_sum: float = 0.0

    def apply(self, estimated: int) -> int:
        return round(estimated * self.ratio)

    def update(self, estimated: int, actual: int) -> Calibration:
        """A new calibration after the provider reported `actual` input + cache tokens for a
        request (or a part of one) we estimated at `estimated`."""
        if estimated <= 0 or actual <= 0:
            return self
        observed = min(4.0, max(0.25, actual / estimated))
        est_sum, act_sum = self.estimated_sum, self.actual_sum
        if est_sum <= 0 and self.samples > 0:  # a ratio set by hand or stored before the sums existed
            est_sum, act_sum = float(estimated), estimated * self.ratio
        est_sum = est_sum * DECAY + estimated
        act_sum = act_sum * DECAY + estimated * observed
        return Calibration(ratio=act_sum / est_sum, samples=self.samples + 1, estimated_sum=est_sum, actual_sum=act_sum)
