"""The provider protocol: one interface for every model longrun can drive.

A provider is synchronous on purpose: it runs inside a Temporal activity, and Temporal owns
retries, so a provider makes exactly one attempt per call and reports failures as
`RetryableProviderError` (try again, maybe after `retry_after`), `ContextOverflow` (shrink the
request, then retry) or `FatalProviderError` (retrying cannot help).
"""

from __future__ import annotations

from collections.abc import Collection
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


def get_provider(
    model: str,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    openai_api_key: str | None = None,
    openai_base_url: str | None = None,
    compatible_api_key: str | None = None,
    compatible_base_url: str | None = None,
    allowed_base_urls: Collection[str] | None = None,
) -> Provider:
    """The built-in provider a run's model key names, given its keys explicitly (a caller outside
    a worker: tests, scripts). A worker builds providers through its `ProviderRegistry`, which
    reads each provider's declared environment names instead (longrun.providers.registry).

    Args:
        model: the run's model key: "scripted", "anthropic:<id>", "openai:<id>",
            "openai-compatible:<id>[?base_url=...&window=...]", "bedrock:<id>" or "vertex:<id>".
        api_key: the Anthropic API key (`ANTHROPIC_API_KEY`).
        base_url: the Anthropic API base URL (`ANTHROPIC_BASE_URL`); None = the SDK's default.
        openai_api_key: OpenAI's key (`OPENAI_API_KEY`), for `openai:` only.
        openai_base_url: OpenAI's base URL (`OPENAI_BASE_URL`); None = api.openai.com.
        compatible_api_key: the key of `openai-compatible:` servers (`LONGRUN_OPENAI_API_KEY`);
            None = a server that needs none. OpenAI's own key is never sent to another server.
        compatible_base_url: their base URL when the run's spec names none (`LONGRUN_OPENAI_BASE_URL`).
        allowed_base_urls: the allow-list for a run's own `base_url`; None: no list (a caller that
            chose the URL itself).

    Raises:
        ConfigError: an unknown model name, or a model without the key or URL it needs.
    """
    from longrun.providers.registry import ProviderRegistry

    environ = {
        "ANTHROPIC_API_KEY": api_key, "ANTHROPIC_BASE_URL": base_url,
        "OPENAI_API_KEY": openai_api_key, "OPENAI_BASE_URL": openai_base_url,
        "LONGRUN_OPENAI_API_KEY": compatible_api_key, "LONGRUN_OPENAI_BASE_URL": compatible_base_url,
    }
    return ProviderRegistry(entry_points=False).build(
        model, environ={k: v for k, v in environ.items() if v}, allowed_base_urls=allowed_base_urls)
