"""The built-in model providers, registered through the same `ModelProvider` mechanism a third
party uses (longrun.providers.registry): scripted, anthropic, openai, openai-compatible, bedrock,
vertex. Each factory imports its adapter (and so its SDK) only when a worker builds it.

Their tables are in `longrun.providers.models_table`, shared because bedrock and vertex serve the
Anthropic models under the clouds' own ids.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from longrun.errors import ConfigError
from longrun.providers import models_table as mt
from longrun.providers import prices as pr
from longrun.providers.registration import ModelProvider, ProviderConfig

if TYPE_CHECKING:
    from longrun.providers.base import Provider

ANTHROPIC_KEY = "ANTHROPIC_API_KEY"
OPENAI_KEY = "OPENAI_API_KEY"
COMPATIBLE_KEY = "LONGRUN_OPENAI_API_KEY"
COMPATIBLE_URL = "LONGRUN_OPENAI_BASE_URL"
DEFAULT_CLAUDE = "anthropic:claude-sonnet-4-6"
"""The model a run gets when ANTHROPIC_API_KEY is set and neither --model nor LONGRUN_MODEL says
otherwise. Without a key the default is `scripted`, the offline deterministic stand-in."""


def _scripted(_config: ProviderConfig) -> Provider:
    from longrun.providers.scripted import ScriptedProvider

    return ScriptedProvider()


def _anthropic(config: ProviderConfig) -> Provider:
    from longrun.providers.anthropic_provider import AnthropicProvider

    return AnthropicProvider(config.model_id, api_key=config.env[ANTHROPIC_KEY],
                             base_url=config.env.get("ANTHROPIC_BASE_URL"))


def _openai(config: ProviderConfig) -> Provider:
    from longrun.providers.openai_responses import OpenAIResponsesProvider

    return OpenAIResponsesProvider(config.model_id, api_key=config.env[OPENAI_KEY],
                                   base_url=config.env.get("OPENAI_BASE_URL"))


def _compatible(config: ProviderConfig) -> Provider:
    """A Chat Completions server: the run's `base_url` (when the worker allows it), else the
    worker's LONGRUN_OPENAI_BASE_URL. The worker's key goes to that server only: a spec's URL
    elsewhere gets no key (whoever may start a run must not be able to collect it)."""
    from longrun.models.spec import base_url_refusal

    own = config.params.get("base_url")
    if own and config.allowed_base_urls is not None:
        refusal = base_url_refusal(own, config.allowed_base_urls)
        if refusal is not None:
            raise ConfigError(refusal)
    url = own or config.env.get(COMPATIBLE_URL)
    if not url:
        raise ConfigError(
            f"model {config.name!r} needs the server's base URL: start the run with --base-url "
            f"(e.g. http://127.0.0.1:11434/v1), or set {COMPATIBLE_URL} on the workers"
        )
    from longrun.providers.openai_chat import OpenAICompatibleProvider, key_for

    return OpenAICompatibleProvider(config.model_id, base_url=url, info=config.info,
                                    api_key=key_for(url, config.env.get(COMPATIBLE_KEY), config.env.get(COMPATIBLE_URL)))


def _cloud(config: ProviderConfig) -> Provider:
    from longrun.providers.cloud import cloud_provider

    return cloud_provider(config.name)


BUILTIN: dict[str, ModelProvider] = {
    # Order matters for `registry.default_model`: the first with a default model and its keys set wins.
    "anthropic": ModelProvider(
        factory=_anthropic, models=mt.ANTHROPIC_MODELS, default_limits=mt.UNKNOWN_ANTHROPIC, info=mt.model_info,
        keys=(ANTHROPIC_KEY,), env=("ANTHROPIC_BASE_URL",), default_model=DEFAULT_CLAUDE,
        description="Claude through the Anthropic API", price=pr.claude_price,
    ),
    "openai": ModelProvider(
        factory=_openai, models=mt.OPENAI_MODELS, default_limits=mt.UNKNOWN_OPENAI, info=mt.model_info,
        keys=(OPENAI_KEY,), env=("OPENAI_BASE_URL",), description="OpenAI through the Responses API",
        price=pr.openai_price,
    ),
    "openai-compatible": ModelProvider(
        factory=_compatible, info=mt.model_info, env=(COMPATIBLE_KEY, COMPATIBLE_URL),
        description="a Chat Completions server at the run's --base-url or the workers' LONGRUN_OPENAI_BASE_URL",
    ),
    "bedrock": ModelProvider(
        factory=_cloud, info=mt.model_info, description="Claude on AWS Bedrock (credentials: the AWS SDK's)",
        price=pr.cloud_claude_price,
    ),
    "vertex": ModelProvider(
        factory=_cloud, info=mt.model_info, description="Claude on Google Vertex AI (credentials: Google's ADC)",
        price=pr.cloud_claude_price,
    ),
    mt.SCRIPTED: ModelProvider(
        factory=_scripted, info=mt.model_info, description="the offline deterministic stand-in (not an LLM)",
        price=pr.zero_price,
    ),
}

__all__ = ["BUILTIN", "DEFAULT_CLAUDE"]
