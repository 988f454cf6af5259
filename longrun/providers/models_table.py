"""Per-model context windows and output limits, in one table instead of in code paths.

Keys are model ids as the Anthropic API names them; a dated id (`claude-haiku-4-5-20251001`)
matches its undated alias. An Anthropic id not in the table gets `UNKNOWN_ANTHROPIC`, a
conservative 200k window and 8k output, so that a new model works (if under-used) until it is
added here.
"""

from __future__ import annotations

import re

from longrun.errors import ConfigError
from longrun.models.provider import ModelInfo

SCRIPTED = "scripted"
ANTHROPIC_PREFIX = "anthropic:"

K = 1_000
WINDOW_200K = 200_000
WINDOW_1M = 1_000_000

ANTHROPIC_MODELS: dict[str, tuple[int, int]] = {
    # id: (context window, maximum output tokens)
    "claude-opus-4-6": (WINDOW_1M, 128 * K),
    "claude-sonnet-4-6": (WINDOW_1M, 64 * K),
    "claude-opus-4-5": (WINDOW_200K, 64 * K),
    "claude-sonnet-4-5": (WINDOW_200K, 64 * K),
    "claude-haiku-4-5": (WINDOW_200K, 64 * K),
    "claude-opus-4-1": (WINDOW_200K, 32 * K),
    "claude-opus-4-0": (WINDOW_200K, 32 * K),
    "claude-sonnet-4-0": (WINDOW_200K, 64 * K),
    "claude-3-7-sonnet": (WINDOW_200K, 64 * K),
    "claude-3-5-haiku": (WINDOW_200K, 8_192),
}

UNKNOWN_ANTHROPIC = (WINDOW_200K, 8_192)
SCRIPTED_INFO = ModelInfo(name=SCRIPTED, window=WINDOW_200K, max_output=8_192)

_DATE_SUFFIX = re.compile(r"-(\d{8}|latest)$")


def anthropic_model_id(model: str) -> str:
    """`anthropic:<id>` -> `<id>`; ConfigError for anything else."""
    if not model.startswith(ANTHROPIC_PREFIX) or len(model) == len(ANTHROPIC_PREFIX):
        raise ConfigError(f"not an Anthropic model name: {model!r}; use 'anthropic:<model-id>' or 'scripted'")
    return model[len(ANTHROPIC_PREFIX) :]


def model_info(model: str) -> ModelInfo:
    """The window and output limit of `model` ("scripted" or "anthropic:<id>").

    Raises:
        ConfigError: the name is neither "scripted" nor "anthropic:<id>".
    """
    if model == SCRIPTED:
        return SCRIPTED_INFO
    model_id = anthropic_model_id(model)
    base = _DATE_SUFFIX.sub("", model_id)
    # Dated snapshots of 4.0 models are named claude-opus-4-YYYYMMDD / claude-sonnet-4-YYYYMMDD.
    window, max_output = ANTHROPIC_MODELS.get(model_id) or ANTHROPIC_MODELS.get(base) or ANTHROPIC_MODELS.get(
        f"{base}-0", UNKNOWN_ANTHROPIC
    )
    return ModelInfo(name=model, window=window, max_output=max_output)
