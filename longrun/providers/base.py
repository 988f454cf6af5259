"""The provider protocol: one interface for every model longrun can drive.

A provider is synchronous on purpose: it runs inside a Temporal activity, and Temporal owns
retries, so a provider makes exactly one attempt per call and reports failures as
`RetryableProviderError` (try again, maybe after `retry_after`), `ContextOverflow` (shrink the
request, then retry) or `FatalProviderError` (retrying cannot help).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from longrun.models.provider import ModelInfo, ModelRequest, ModelResponse


@runtime_checkable
class Provider(Protocol):
    """A model behind longrun's request/response contract.

    Attributes:
        name: what a run spec names it by, e.g. "scripted" or "anthropic:claude-sonnet-4-6";
            shown in status and audit.
        info: the model's context window and maximum output tokens.
    """

    name: str
    info: ModelInfo

    def complete(self, request: ModelRequest) -> ModelResponse:
        """One model call: the assistant's content blocks, stop reason and usage.

        Raises:
            ContextOverflow: the request does not fit the model's window.
            RetryableProviderError: a transient failure (rate limit, overload, server error).
            FatalProviderError: a request the provider will never accept.
        """
        ...

    def count_tokens(self, request: ModelRequest) -> int:
        """Input tokens of `request` as the provider counts them."""
        ...


def get_provider(model: str, *, api_key: str | None = None, base_url: str | None = None) -> Provider:
    """The provider a run spec names: "scripted" or "anthropic:<model-id>".

    Args:
        model: the run's model name.
        api_key: the Anthropic API key (settings: `ANTHROPIC_API_KEY`); unused by "scripted".
        base_url: the Anthropic API base URL (settings: `ANTHROPIC_BASE_URL`); None = the SDK's
            default (which itself reads `ANTHROPIC_BASE_URL`).

    Raises:
        ConfigError: an unknown model name, or an Anthropic model without an API key.
    """
    from longrun.errors import ConfigError
    from longrun.providers.models_table import ANTHROPIC_PREFIX, SCRIPTED, anthropic_model_id

    if model == SCRIPTED:
        from longrun.providers.scripted import ScriptedProvider

        return ScriptedProvider()
    if model.startswith(ANTHROPIC_PREFIX):
        model_id = anthropic_model_id(model)
        if not api_key:
            raise ConfigError(
                f"model {model!r} needs an Anthropic API key: set ANTHROPIC_API_KEY, or run with model 'scripted'"
            )
        from longrun.providers.anthropic_provider import AnthropicProvider

        return AnthropicProvider(model_id, api_key=api_key, base_url=base_url)
    raise ConfigError(f"unknown model {model!r}: use 'scripted' or 'anthropic:<model-id>'")
