"""Per-model context windows and output limits, in one table instead of in code paths.

Keys are model ids as the Anthropic API names them; a dated id (`claude-haiku-4-5-20251001`)
matches its undated alias. An Anthropic id not in the table gets `UNKNOWN_ANTHROPIC`, a
conservative 200k window and 8k output, so that a new model works (if under-used) until it is
added here.

The other kinds: `openai:<id>` (OPENAI_MODELS, else `UNKNOWN_OPENAI`), `bedrock:<id>` and
`vertex:<id>` (Claude: their ids map onto the Anthropic rows), and `openai-compatible:<id>`, whose
window is the run's `context_window` or `COMPATIBLE_DEFAULT_WINDOW`: a local server's window is
whatever it was started with, so no table can know it.

A worker builds one provider per *model key*: the model name, plus, for `openai-compatible:`, the
run's base URL and window as a query (`openai-compatible:qwen3?base_url=...&window=32768`; see
`longrun.models.spec.model_key`). A plain model name is its own key.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl

from longrun.errors import ConfigError
from longrun.models.provider import ModelInfo

SCRIPTED = "scripted"
ANTHROPIC_PREFIX = "anthropic:"
OPENAI_PREFIX = "openai:"
COMPATIBLE_PREFIX = "openai-compatible:"
BEDROCK_PREFIX = "bedrock:"
VERTEX_PREFIX = "vertex:"
PREFIXES = (ANTHROPIC_PREFIX, OPENAI_PREFIX, COMPATIBLE_PREFIX, BEDROCK_PREFIX, VERTEX_PREFIX)

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

OPENAI_MODELS: dict[str, tuple[int, int]] = {
    # id: (input tokens a request may hold, maximum output tokens). GPT-5's 400k is input + output,
    # with at most 272k of input: the window here is the input's.
    "gpt-5.1": (272 * K, 128 * K),
    "gpt-5": (272 * K, 128 * K),
    "gpt-5-mini": (272 * K, 128 * K),
    "gpt-5-nano": (272 * K, 128 * K),
    "gpt-4.1": (1_047_576, 32_768),
    "gpt-4.1-mini": (1_047_576, 32_768),
    "gpt-4.1-nano": (1_047_576, 32_768),
    "gpt-4o": (128 * K, 16_384),
    "gpt-4o-mini": (128 * K, 16_384),
    "o3": (WINDOW_200K, 100 * K),
    "o4-mini": (WINDOW_200K, 100 * K),
}
UNKNOWN_OPENAI = (128 * K, 16_384)
COMPATIBLE_DEFAULT_WINDOW = 32_768
"""The window of an `openai-compatible:` model when the run gives none (`--context-window`):
small enough for most local servers' defaults above 32k (vLLM takes the model's own, llama.cpp's
`-c`, Ollama's `OLLAMA_CONTEXT_LENGTH`). A server started with less refuses a request that is too
long (the overflow path compacts and retries), except Ollama, which silently drops the oldest
tokens: give it `--context-window` equal to what it was started with."""
COMPATIBLE_MAX_OUTPUT = 8_192

_CLOUD_ID = re.compile(r"^(?:(?:us|eu|apac|jp|au|ca|global|us-gov)\.)?(?:anthropic\.)?(.+?)(?:-v\d+(?::\d+)?)?(?:@(\d{8}|latest))?$")
SCRIPTED_INFO = ModelInfo(name=SCRIPTED, window=WINDOW_200K, max_output=8_192)

_DATE_SUFFIX = re.compile(r"-(\d{8}|latest)$")


def anthropic_model_id(model: str) -> str:
    """`anthropic:<id>` -> `<id>`; ConfigError for anything else."""
    if not model.startswith(ANTHROPIC_PREFIX) or len(model) == len(ANTHROPIC_PREFIX):
        raise ConfigError(f"not an Anthropic model name: {model!r}; use 'anthropic:<model-id>' or 'scripted'")
    return model[len(ANTHROPIC_PREFIX) :]


def split_model_key(key: str) -> tuple[str, dict[str, str]]:
    """A model key as (model name, its parameters): `base_url` and `window` for openai-compatible."""
    model, sep, query = key.partition("?")
    return model, dict(parse_qsl(query)) if sep else {}


def _claude_info(model: str, model_id: str) -> ModelInfo:
    base = _DATE_SUFFIX.sub("", model_id)
    # Dated snapshots of 4.0 models are named claude-opus-4-YYYYMMDD / claude-sonnet-4-YYYYMMDD.
    window, max_output = ANTHROPIC_MODELS.get(model_id) or ANTHROPIC_MODELS.get(base) or ANTHROPIC_MODELS.get(
        f"{base}-0", UNKNOWN_ANTHROPIC
    )
    return ModelInfo(name=model, window=window, max_output=max_output)


def model_info(model: str) -> ModelInfo:
    """The window and output limit of `model` (a model name or a model key).

    Raises:
        ConfigError: the name is not "scripted" nor one of the kinds in PREFIXES.
    """
    model, params = split_model_key(model)
    if model == SCRIPTED:
        return SCRIPTED_INFO
    if model.startswith((BEDROCK_PREFIX, VERTEX_PREFIX)):
        found = _CLOUD_ID.match(model.split(":", 1)[1])
        return _claude_info(model, found.group(1) if found else model.split(":", 1)[1])
    if model.startswith(OPENAI_PREFIX):
        window, max_output = OPENAI_MODELS.get(model[len(OPENAI_PREFIX):], UNKNOWN_OPENAI)
        return ModelInfo(name=model, window=window, max_output=max_output)
    if model.startswith(COMPATIBLE_PREFIX):
        window = int(params.get("window") or COMPATIBLE_DEFAULT_WINDOW)
        return ModelInfo(name=model, window=window, max_output=min(COMPATIBLE_MAX_OUTPUT, window // 4))
    return _claude_info(model, anthropic_model_id(model))
