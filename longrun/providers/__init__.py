"""Model providers behind one protocol: `scripted` (offline, deterministic) and `anthropic`.

    provider = get_provider(run_spec.model, api_key=settings.anthropic_api_key,
                            base_url=settings.anthropic_base_url)
    response = provider.complete(request)
"""

from longrun.providers.anthropic_provider import AnthropicProvider, map_api_error, to_api_messages
from longrun.providers.base import Provider, get_provider
from longrun.providers.models_table import ANTHROPIC_MODELS, model_info
from longrun.providers.scripted import ScriptedProvider
from longrun.providers.summarizer import ModelSummarizer

__all__ = [
    "ANTHROPIC_MODELS",
    "AnthropicProvider",
    "ModelSummarizer",
    "Provider",
    "ScriptedProvider",
    "get_provider",
    "map_api_error",
    "model_info",
    "to_api_messages",
]
