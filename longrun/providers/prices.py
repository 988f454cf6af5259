"""List prices per model, in US dollars per million tokens, and what one request cost.

Each provider's registration carries its own table (`ModelProvider.prices`, or `price` for a
provider whose ids need mapping, as bedrock and vertex map theirs onto the Claude rows), so adding
a model touches its provider only. `LONGRUN_PRICES` names a JSON or TOML file that overrides or
extends them, by full model name (`longrun.providers.price_file`).

A model without a price has *no price*: its cost is None and every sum that includes it says so.
It is never counted as free, because a budget that treats an unknown price as $0 is no budget.
`scripted`, the offline stand-in, costs exactly $0.

Why a cost is computed from the recorded usage, never from an estimate: the provider's usage is
what it bills. OpenAI reports cached input inside its input count; the adapters split it out
(`cache_read_input_tokens`), so OpenAI's cached-input price is `cache_read` here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from longrun.models.provider import Usage

MILLION = 1_000_000
SCRIPTED_NOTE = "the scripted stand-in costs nothing"
NO_PRICE = "no price"


@dataclass(frozen=True)
class Price:
    """Dollars per million tokens of each kind.

    Attributes:
        input: uncached input.
        output: output (thinking included, as providers bill it).
        cache_write: input written to the prompt cache (Anthropic's 5-minute write; 0 where the
            provider does not charge writes separately).
        cache_read: input read from the cache (OpenAI: its cached-input price).
    """

    input: float
    output: float
    cache_write: float = 0.0
    cache_read: float = 0.0

    def cost(self, usage: Usage) -> float:
        """Dollars for one request's `usage`."""
        return (usage.input_tokens * self.input + usage.output_tokens * self.output
                + usage.cache_creation_input_tokens * self.cache_write
                + usage.cache_read_input_tokens * self.cache_read) / MILLION


def _claude(inp: float, out: float) -> Price:
    """Anthropic's rule: a 5-minute cache write costs 1.25x input, a cache read 0.1x."""
    return Price(input=inp, output=out, cache_write=round(inp * 1.25, 6), cache_read=round(inp * 0.1, 6))


ANTHROPIC_PRICES: dict[str, Price] = {
    "claude-opus-4-6": _claude(5.0, 25.0),
    "claude-opus-4-5": _claude(5.0, 25.0),
    "claude-opus-4-1": _claude(15.0, 75.0),
    "claude-opus-4-0": _claude(15.0, 75.0),
    "claude-sonnet-4-6": _claude(3.0, 15.0),
    "claude-sonnet-4-5": _claude(3.0, 15.0),
    "claude-sonnet-4-0": _claude(3.0, 15.0),
    "claude-3-7-sonnet": _claude(3.0, 15.0),
    "claude-haiku-4-5": _claude(1.0, 5.0),
    "claude-3-5-haiku": _claude(0.8, 4.0),
}

OPENAI_PRICES: dict[str, Price] = {
    # id: input, output, cached input (OpenAI does not charge cache writes)
    "gpt-5.1": Price(1.25, 10.0, cache_read=0.125),
    "gpt-5": Price(1.25, 10.0, cache_read=0.125),
    "gpt-5-mini": Price(0.25, 2.0, cache_read=0.025),
    "gpt-5-nano": Price(0.05, 0.40, cache_read=0.005),
    "gpt-4.1": Price(2.0, 8.0, cache_read=0.50),
    "gpt-4.1-mini": Price(0.40, 1.60, cache_read=0.10),
    "gpt-4.1-nano": Price(0.10, 0.40, cache_read=0.025),
    "gpt-4o": Price(2.50, 10.0, cache_read=1.25),
    "gpt-4o-mini": Price(0.15, 0.60, cache_read=0.075),
    "o3": Price(2.0, 8.0, cache_read=0.50),
    "o4-mini": Price(1.10, 4.40, cache_read=0.275),
}

_DATE_SUFFIX = re.compile(r"-(\d{8}|latest)$")
_CLOUD_ID = re.compile(r"^(?:(?:us|eu|apac|jp|au|ca|global|us-gov)\.)?(?:anthropic\.)?(.+?)(?:-v\d+(?::\d+)?)?(?:@(\d{8}|latest))?$")


def claude_price(model_id: str) -> Price | None:
    """The price of an Anthropic model id, dated or not (`claude-haiku-4-5-20251001`)."""
    base = _DATE_SUFFIX.sub("", model_id)
    return ANTHROPIC_PRICES.get(model_id) or ANTHROPIC_PRICES.get(base) or ANTHROPIC_PRICES.get(f"{base}-0")


def cloud_claude_price(model_id: str) -> Price | None:
    """The price of a Claude model as Bedrock or Vertex names it: the Anthropic row it maps onto
    (`us.anthropic.claude-sonnet-4-5-20250929-v1:0`, `claude-sonnet-4-5@20250929`)."""
    found = _CLOUD_ID.match(model_id)
    return claude_price(found.group(1) if found else model_id)


def openai_price(model_id: str) -> Price | None:
    """The price of an OpenAI model id, dated or not (`gpt-4.1-2025-04-14`)."""
    if model_id in OPENAI_PRICES:
        return OPENAI_PRICES[model_id]
    return OPENAI_PRICES.get(re.sub(r"-\d{4}-\d{2}-\d{2}$", "", model_id))


def zero_price(_model_id: str) -> Price:
    """`scripted`: the offline stand-in costs nothing."""
    return Price(0.0, 0.0)


def format_dollars(dollars: float | None) -> str:
    """`$0.0123`, or "no price" (never "$0" for an unknown price)."""
    if dollars is None:
        return NO_PRICE
    if dollars == 0:
        return "$0.00"
    return f"${dollars:,.4f}" if dollars < 1 else f"${dollars:,.2f}"


__all__ = ["ANTHROPIC_PRICES", "NO_PRICE", "OPENAI_PRICES", "SCRIPTED_NOTE", "Price", "claude_price",
           "cloud_claude_price", "format_dollars", "openai_price", "zero_price"]
