"""What a model provider registers (`ModelProvider`) and what its factory gets (`ProviderConfig`),
and how a model name splits into prefix and id.

Apart from `registry` so the built-in registrations (`builtin`) and the registry that lists them
can both import these without importing each other.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from longrun.errors import ConfigError
from longrun.models.provider import ModelInfo

if TYPE_CHECKING:
    from longrun.providers.base import Provider
    from longrun.providers.prices import Price

ENTRY_POINT_GROUP = "longrun.providers"
BARE = "scripted"
"""The one model named without a model id: the offline stand-in."""


@dataclass(frozen=True)
class ProviderConfig:
    """What a factory gets to build one provider.

    Attributes:
        name: the model's name as the run names it, e.g. "echo:v1" (the provider's `name`).
        model_id: the part after the prefix ("v1"; empty for `scripted`).
        info: its window and output limit, from the provider's table.
        env: the worker's values of the names the provider declared (`keys` and `env`), and only
            those: a provider never sees another's key.
        params: the model key's parameters (`openai-compatible`: the run's `base_url`, `window`).
        allowed_base_urls: the `base_url`s a run may name on this worker (None: a caller that
            chose the URL itself, as `get_provider` does).
    """

    name: str
    model_id: str
    info: ModelInfo
    env: Mapping[str, str] = field(default_factory=dict)
    params: Mapping[str, str] = field(default_factory=dict)
    allowed_base_urls: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ModelProvider:
    """One provider's registration: everything about its models lives here.

    Attributes:
        factory: builds the provider of one model (imports its SDK inside, not at module level).
        models: model id -> (context window, maximum output tokens).
        default_limits: the limits of an id the table lacks; None refuses such an id.
        keys: environment names of the keys the provider cannot work without (checked before the
            factory runs: a run without one fails with the name to set).
        env: other environment names the factory reads (base URLs, optional keys).
        default_model: the model a run gets when this provider's keys are set and neither
            `--model` nor LONGRUN_MODEL says otherwise (built-ins only; anthropic's today).
        info: computes the limits itself (from the whole model key), instead of `models`.
        description: one line for help and errors.
        prices: model id -> its list price (`longrun.providers.prices.Price`); an id not listed
            has no price (never $0).
        price: computes the price itself from the model id, instead of `prices` (bedrock and
            vertex map their ids onto the Claude rows).
    """

    factory: Callable[[ProviderConfig], Provider]
    models: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    default_limits: tuple[int, int] | None = None
    keys: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    default_model: str | None = None
    info: Callable[[str], ModelInfo] | None = None
    description: str = ""
    prices: Mapping[str, Price] = field(default_factory=dict)
    price: Callable[[str], Price | None] | None = None

    def price_of(self, model_id: str) -> Price | None:
        """The list price of `model_id`, None when this provider lists none for it."""
        if self.price is not None:
            return self.price(model_id)
        return self.prices.get(model_id)

    def model_info(self, key: str, model_id: str) -> ModelInfo:
        """The window and output limit of `key` (a model key whose id is `model_id`).

        Raises:
            ConfigError: an id not in `models`, when the provider has no `default_limits`."""
        if self.info is not None:
            return self.info(key)
        limits = self.models.get(model_id) or self.default_limits
        if limits is None:
            known = ", ".join(sorted(self.models)) or "none"
            raise ConfigError(f"unknown model {split_key(key)[0]!r}: its provider knows only these ids: {known}")
        return ModelInfo(name=split_key(key)[0], window=limits[0], max_output=limits[1])


def split_key(key: str) -> tuple[str, dict[str, str]]:
    """A model key as (model name, its parameters); see `longrun.models.spec.model_key`."""
    from urllib.parse import parse_qsl

    model, sep, query = key.partition("?")
    return model, dict(parse_qsl(query)) if sep else {}


def prefix_of(model: str) -> tuple[str, str]:
    """`anthropic:claude-x` -> ("anthropic", "claude-x"); `scripted` -> ("scripted", "")."""
    name = split_key(model)[0]
    prefix, _, model_id = name.partition(":")
    return prefix, model_id
