"""Model providers behind one protocol: `scripted` (offline, deterministic), Anthropic, OpenAI and
OpenAI-compatible servers, Claude on Bedrock and Vertex.

    provider = get_provider(run_spec.model, api_key=settings.anthropic_api_key,
                            base_url=settings.anthropic_base_url)
    response = provider.complete(request)

The names below are loaded when first used (PEP 562): importing the SDKs (`anthropic`, `openai`)
costs about 4 s of CPU, and every CLI command, the console and the workflow module import this
package only for the protocol. A `longrun status` should not pay for model SDKs it never calls.

Which providers exist is a registry's (`longrun.providers.registry`): each is registered under
its prefix with its models table, keys, defaults and factory; the built-ins
(`longrun.providers.builtin`) the same way as a worker's own or an installed package's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from longrun.lazy_names import lazy_names

if TYPE_CHECKING:
    from longrun.models.blocks import Message, TextBlock, ToolResultBlock, ToolUseBlock
    from longrun.models.provider import ModelInfo, ModelRequest, ModelResponse, Usage
    from longrun.providers.anthropic_provider import AnthropicProvider, map_api_error, to_api_messages
    from longrun.providers.base import Provider, get_provider
    from longrun.providers.models_table import ANTHROPIC_MODELS, model_info
    from longrun.providers.registry import ModelProvider, ProviderConfig, ProviderRegistry
    from longrun.providers.scripted import ScriptedProvider
    from longrun.providers.summarizer import ModelSummarizer

_WHERE = {
    # what a provider of your own reads and answers (docs/LIBRARY.md, Custom models)
    "Message": "longrun.models.blocks",
    "ModelInfo": "longrun.models.provider",
    "ModelRequest": "longrun.models.provider",
    "ModelResponse": "longrun.models.provider",
    "TextBlock": "longrun.models.blocks",
    "ToolResultBlock": "longrun.models.blocks",
    "ToolUseBlock": "longrun.models.blocks",
    "Usage": "longrun.models.provider",
    "ANTHROPIC_MODELS": "longrun.providers.models_table",
    "AnthropicProvider": "longrun.providers.anthropic_provider",
    "ModelProvider": "longrun.providers.registry",
    "ModelSummarizer": "longrun.providers.summarizer",
    "ProviderConfig": "longrun.providers.registry",
    "ProviderRegistry": "longrun.providers.registry",
    "Provider": "longrun.providers.base",
    "ScriptedProvider": "longrun.providers.scripted",
    "get_provider": "longrun.providers.base",
    "map_api_error": "longrun.providers.anthropic_provider",
    "model_info": "longrun.providers.models_table",
    "to_api_messages": "longrun.providers.anthropic_provider",
}

__all__ = [
    "ANTHROPIC_MODELS",
    "AnthropicProvider",
    "Message",
    "ModelInfo",
    "ModelProvider",
    "ModelRequest",
    "ModelResponse",
    "ModelSummarizer",
    "Provider",
    "ProviderConfig",
    "ProviderRegistry",
    "ScriptedProvider",
    "TextBlock",
    "ToolResultBlock",
    "ToolUseBlock",
    "Usage",
    "get_provider",
    "map_api_error",
    "model_info",
    "to_api_messages",
]


__getattr__, __dir__ = lazy_names(__name__, _WHERE, globals())
