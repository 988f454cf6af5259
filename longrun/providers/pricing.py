"""List prices, for the console's "cost so far": an estimate, not a bill.

Per million tokens, in US dollars, by model family (the model id's prefix after the provider).
A model not listed has no estimate (the console shows "-"), rather than a guess; `scripted` costs
nothing. Cache writes and reads are priced as the provider lists them.
"""

from __future__ import annotations

from longrun.models.provider import Usage

# (prefix, input, cache write, cache read, output)
PRICES: tuple[tuple[str, float, float, float, float], ...] = (
    ("claude-opus-4", 5.0, 6.25, 0.50, 25.0),
    ("claude-sonnet-4", 3.0, 3.75, 0.30, 15.0),
    ("claude-haiku-4", 1.0, 1.25, 0.10, 5.0),
)


def estimate_cost(model: str, usage: Usage) -> float | None:
    """Dollars for `usage` on `model` at list price; None when the model has no listed price."""
    if model == "scripted":
        return 0.0
    name = model.split(":", 1)[-1]
    name = name.rsplit("/", 1)[-1].removeprefix("anthropic.")  # bedrock and vertex ids name the same models
    for prefix, inp, write, read, out in PRICES:
        if name.startswith(prefix):
            return (usage.input_tokens * inp + usage.cache_creation_input_tokens * write
                    + usage.cache_read_input_tokens * read + usage.output_tokens * out) / 1_000_000
    return None


__all__ = ["PRICES", "estimate_cost"]
