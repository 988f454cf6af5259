"""`bedrock:<id>` and `vertex:<id>`: Claude on AWS Bedrock and Google Vertex AI, through the
Anthropic SDK's own `AnthropicBedrock` / `AnthropicVertex` clients.

Everything but the client is the Anthropic adapter's: the same request cleaning, tool pairing
check, cache breakpoints (both clouds honour `cache_control` for Claude), response parsing and
error mapping; the SDK moves the model into the URL (`/model/<id>/invoke`,
`.../publishers/anthropic/models/<id>:rawPredict`) and sets the cloud's `anthropic_version`.
One attempt per call (`max_retries=0`), as for every provider.

Credentials, region and project are where each cloud's tooling looks, never in a spec:
Bedrock: `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN` or a profile
(`AWS_PROFILE`), or a Bedrock API key (`AWS_BEARER_TOKEN_BEDROCK`), and `AWS_REGION`; Vertex:
Google application default credentials, `CLOUD_ML_REGION` and `ANTHROPIC_VERTEX_PROJECT_ID`.
Both need their extra (`pip install 'longrun[bedrock]'` / `'longrun[vertex]'`).

Bedrock words an overflow its own way ("Input is too long for requested model", a
ValidationException): it becomes the same `ContextOverflow` as the API's "prompt is too long".
Neither cloud is asked to count tokens: `count_tokens` is longrun's estimate (calibration corrects
it from the usage each answer reports).
"""

from __future__ import annotations

import re
from typing import Any

import anthropic

from longrun.context.tokens import estimate_request
from longrun.errors import ConfigError, ContextOverflow, ProviderError
from longrun.models.provider import ModelRequest, ModelResponse
from longrun.providers.anthropic_provider import DEFAULT_TIMEOUT, AnthropicProvider, map_api_error
from longrun.providers.models_table import BEDROCK_PREFIX, VERTEX_PREFIX, model_info

_CLOUD_OVERFLOW = re.compile(r"input is too long|too many input tokens|prompt is too long|context window", re.IGNORECASE)


class CloudClaudeProvider(AnthropicProvider):
    """Claude through a cloud's Anthropic client (see the module docstring).

    Args:
        name: `bedrock:<id>` or `vertex:<id>`, the id as the cloud names the model
            (`us.anthropic.claude-sonnet-4-5-20250929-v1:0`, `claude-sonnet-4-5@20250929`).
        client_args: passed to the SDK's client (region, credentials, base_url); the rest from
            the environment.
    """

    def __init__(self, name: str, *, timeout: float = DEFAULT_TIMEOUT, prompt_caching: bool = True,
                 **client_args: Any) -> None:
        self.name = name
        self.model_id = name.split(":", 1)[1]
        self.info = model_info(name)
        self.prompt_caching = prompt_caching
        self.client = _client(name, timeout=timeout, **client_args)  # type: ignore[assignment]

    def complete(self, request: ModelRequest) -> ModelResponse:
        try:
            return super().complete(request)
        except ContextOverflow:
            raise
        except ProviderError as exc:
            cause = exc.__cause__
            if isinstance(cause, anthropic.APIStatusError) and cause.status_code == 400 and _CLOUD_OVERFLOW.search(
                str(cause.message)
            ):
                raise ContextOverflow(f"{self.name} refused the request as too long: {cause.message}") from cause
            raise

    def count_tokens(self, request: ModelRequest) -> int:
        return estimate_request(request)


def _client(name: str, *, timeout: float, **client_args: Any) -> anthropic.AnthropicBedrock | anthropic.AnthropicVertex:
    try:
        if name.startswith(BEDROCK_PREFIX):
            return anthropic.AnthropicBedrock(max_retries=0, timeout=timeout, **client_args)
        return anthropic.AnthropicVertex(max_retries=0, timeout=timeout, **client_args)
    except ImportError as exc:
        extra = "bedrock" if name.startswith(BEDROCK_PREFIX) else "vertex"
        raise ConfigError(f"model {name!r} needs the {extra} extra: pip install 'longrun[{extra}]' ({exc})") from exc
    except Exception as exc:  # the SDK's own complaint: no region, no project
        raise ConfigError(f"model {name!r}: {exc}; see docs/CONFIGURATION.md, Models") from exc


def cloud_provider(name: str, **client_args: Any) -> CloudClaudeProvider:
    """The provider of a `bedrock:` or `vertex:` model name.

    Raises:
        ConfigError: another kind of name, the cloud's extra missing, or no region / project.
    """
    if not name.startswith((BEDROCK_PREFIX, VERTEX_PREFIX)):
        raise ConfigError(f"not a cloud model name: {name!r}; use bedrock:<model-id> or vertex:<model-id>")
    return CloudClaudeProvider(name, **client_args)


__all__ = ["CloudClaudeProvider", "cloud_provider", "map_api_error"]
