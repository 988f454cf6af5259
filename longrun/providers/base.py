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
    """The provider a run's model key names (a model name, or one with a server and window, see
    `longrun.models.spec.model_key`).

    Args:
        model: the run's model key: "scripted", "anthropic:<id>", "openai:<id>",
            "openai-compatible:<id>[?base_url=...&window=...]", "bedrock:<id>" or "vertex:<id>".
        api_key: the Anthropic API key (settings: `ANTHROPIC_API_KEY`).
        base_url: the Anthropic API base URL (settings: `ANTHROPIC_BASE_URL`); None = the SDK's
            default (which itself reads `ANTHROPIC_BASE_URL`).
        openai_api_key: OpenAI's key (settings: `OPENAI_API_KEY`), for `openai:` only.
        openai_base_url: OpenAI's base URL (settings: `OPENAI_BASE_URL`); None = api.openai.com.
        compatible_api_key: the key of `openai-compatible:` servers (settings:
            `LONGRUN_OPENAI_API_KEY`); None = a server that needs none. OpenAI's own key is never
            sent to another server.
        compatible_base_url: their base URL when the run's spec names none (settings:
            `LONGRUN_OPENAI_BASE_URL`). When set, the key goes to that server only: a spec's
            `base_url` elsewhere gets no key (whoever may start a run must not be able to collect it).
        allowed_base_urls: a worker's allow-list for a run's own `base_url` (settings:
            `LONGRUN_OPENAI_BASE_URL` plus `LONGRUN_ALLOWED_BASE_URLS`); a URL outside it is refused
            before anything connects. None: no list (a caller that chose the URL itself).

    `bedrock:` and `vertex:` take their credentials, region and project where the AWS and Google
    SDKs look (`AWS_*`, `AWS_REGION`; application default credentials, `CLOUD_ML_REGION`,
    `ANTHROPIC_VERTEX_PROJECT_ID`), as the Anthropic SDK's cloud clients do.

    Raises:
        ConfigError: an unknown model name, or a model without the key or URL it needs.
    """
    from longrun.errors import ConfigError
    from longrun.models.spec import base_url_refusal
    from longrun.providers import models_table as mt

    name, params = mt.split_model_key(model)
    if name == mt.SCRIPTED:
        from longrun.providers.scripted import ScriptedProvider

        return ScriptedProvider()
    if name.startswith(mt.ANTHROPIC_PREFIX):
        model_id = mt.anthropic_model_id(name)
        if not api_key:
            raise ConfigError(
                f"model {name!r} needs an Anthropic API key: set ANTHROPIC_API_KEY, or run with model 'scripted'"
            )
        from longrun.providers.anthropic_provider import AnthropicProvider

        return AnthropicProvider(model_id, api_key=api_key, base_url=base_url)
    if name.startswith(mt.COMPATIBLE_PREFIX) and len(name) > len(mt.COMPATIBLE_PREFIX):
        url = params.get("base_url") or compatible_base_url
        if params.get("base_url") and allowed_base_urls is not None:
            refusal = base_url_refusal(params["base_url"], allowed_base_urls)
            if refusal is not None:
                raise ConfigError(refusal)
        if not url:
            raise ConfigError(
                f"model {name!r} needs the server's base URL: start the run with --base-url "
                "(e.g. http://127.0.0.1:11434/v1), or set LONGRUN_OPENAI_BASE_URL on the workers"
            )
        from longrun.providers.openai_chat import OpenAICompatibleProvider, key_for

        return OpenAICompatibleProvider(name[len(mt.COMPATIBLE_PREFIX):], base_url=url, info=mt.model_info(model),
                                        api_key=key_for(url, compatible_api_key, compatible_base_url))
    if name.startswith(mt.OPENAI_PREFIX) and len(name) > len(mt.OPENAI_PREFIX):
        if not openai_api_key:
            raise ConfigError(f"model {name!r} needs an OpenAI API key: set OPENAI_API_KEY on the workers")
        from longrun.providers.openai_responses import OpenAIResponsesProvider

        return OpenAIResponsesProvider(name[len(mt.OPENAI_PREFIX):], api_key=openai_api_key, base_url=openai_base_url)
    if name.startswith((mt.BEDROCK_PREFIX, mt.VERTEX_PREFIX)) and ":" in name and not name.endswith(":"):
        from longrun.providers.cloud import cloud_provider

        return cloud_provider(name)
    raise ConfigError(
        f"unknown model {name!r}: use 'scripted', or one of {', '.join(p + '<model-id>' for p in mt.PREFIXES)}"
    )
