"""Where a model's price comes from: the `LONGRUN_PRICES` file first, then its provider's table.

`LONGRUN_PRICES` names a JSON or TOML file (by its suffix, `.toml`; anything else is read as
JSON) that maps full model names, or a whole provider as `<prefix>:*`, to dollars per million
tokens:

    {"openai-compatible:qwen3": {"input": 0.2, "output": 0.6},
     "anthropic:claude-sonnet-4-6": {"input": 3, "output": 15, "cache_write": 3.75, "cache_read": 0.3}}

    ["openai-compatible:*"]
    input = 0
    output = 0

An exact name wins over `<prefix>:*`, and either over the provider's own table: a team with a
negotiated rate, a local server that costs nothing, a model released after this version.

The file is read once per process (a worker's prices do not change under a running run). A file
that does not parse stops the worker at its first request with the reason, rather than costing
every request at a guess.
"""

from __future__ import annotations

import json
import os
import threading
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from longrun.errors import ConfigError
from longrun.models.provider import Usage
from longrun.providers.prices import Price
from longrun.providers.registration import BARE, prefix_of, split_key

PRICES_ENV = "LONGRUN_PRICES"
_FIELDS = ("input", "output", "cache_write", "cache_read")


def load_price_file(path: str | Path) -> dict[str, Price]:
    """The prices a `LONGRUN_PRICES` file lists, by model name (or `<prefix>:*`).

    Raises:
        ConfigError: the file is missing, does not parse, or an entry is not a price."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
        data: Any = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{PRICES_ENV}={path}: cannot read it ({exc}); fix the file or unset {PRICES_ENV}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{PRICES_ENV}={path}: expected a table of model name -> price, got {type(data).__name__}")
    prices: dict[str, Price] = {}
    for name, entry in data.items():
        if not isinstance(entry, dict) or not {"input", "output"} <= set(entry) or set(entry) - set(_FIELDS):
            raise ConfigError(f"{PRICES_ENV}={path}: {name!r} must be a table with input and output (and optionally "
                              f"cache_write, cache_read), dollars per million tokens; got {entry!r}")
        values = {k: entry[k] for k in _FIELDS if k in entry}
        if not all(isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in values.values()):
            raise ConfigError(f"{PRICES_ENV}={path}: {name!r}: every price must be a number >= 0, got {entry!r}")
        prices[str(name)] = Price(**{k: float(v) for k, v in values.items()})
    return prices


class PriceBook:
    """The price of any model a worker can build: its override file, then its registry.

    Args:
        registry: the worker's providers (None: the built-ins and entry points).
        environ: where `LONGRUN_PRICES` is read (None: the process environment).
    """

    def __init__(self, registry: Any = None, environ: Mapping[str, str] | None = None) -> None:
        self._registry = registry
        self._environ = os.environ if environ is None else environ
        self._overrides: dict[str, Price] | None = None
        self._lock = threading.Lock()

    def overrides(self) -> dict[str, Price]:
        with self._lock:
            if self._overrides is None:
                path = self._environ.get(PRICES_ENV)
                self._overrides = load_price_file(path) if path else {}
            return self._overrides

    def _providers(self) -> Any:
        if self._registry is None:
            from longrun.providers.registry import ProviderRegistry

            self._registry = ProviderRegistry()
        return self._registry

    def price(self, model: str) -> Price | None:
        """The price of `model` (a model name or key); None: no price anywhere."""
        name = split_key(model)[0]
        prefix, model_id = prefix_of(name)
        found = self.overrides().get(name) or self.overrides().get(f"{prefix}:*")
        if found is not None:
            return found
        try:
            provider = self._providers().get(prefix)
        except ConfigError:
            return None
        if provider is None or (not model_id and prefix != BARE):
            return None
        result: Price | None = provider.price_of(model_id)
        return result

    def cost(self, model: str, usage: Usage) -> float | None:
        """Dollars for `usage` on `model`; None when the model has no price (never 0)."""
        price = self.price(model)
        return None if price is None else price.cost(usage)


_default: PriceBook | None = None


def default_book() -> PriceBook:
    """The process's price book over the built-in providers (for readers without a worker's)."""
    global _default
    if _default is None:
        _default = PriceBook()
    return _default


__all__ = ["PRICES_ENV", "PriceBook", "default_book", "load_price_file"]
