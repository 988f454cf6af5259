"""`estimate_cost`, kept for its callers (the console): the price of a model's usage as the
provider registry and `LONGRUN_PRICES` list it (`longrun.providers.price_book`).

A model with no listed price has no estimate (None: shown as "no price"), rather than a guess;
`scripted` costs nothing.
"""

from __future__ import annotations

from longrun.models.provider import Usage
from longrun.providers.price_book import default_book


def estimate_cost(model: str, usage: Usage) -> float | None:
    """Dollars for `usage` on `model` at list price; None when the model has no listed price."""
    return default_book().cost(model, usage)


__all__ = ["estimate_cost"]
