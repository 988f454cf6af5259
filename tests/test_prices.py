"""Prices per provider (issue 28, spend): each registration carries its table, `LONGRUN_PRICES`
overrides or extends it, a model with no price says so (None, never $0), `scripted` costs $0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longrun.errors import ConfigError
from longrun.models.provider import Usage
from longrun.providers import ModelProvider, ProviderRegistry
from longrun.providers.models_table import ANTHROPIC_MODELS, OPENAI_MODELS
from longrun.providers.price_book import PriceBook
from longrun.providers.pricing import estimate_cost

MILLION = Usage(input_tokens=1_000_000, output_tokens=1_000_000, cache_creation_input_tokens=1_000_000,
                cache_read_input_tokens=1_000_000)


def test_every_model_the_adapters_list_has_a_price() -> None:
    book = PriceBook(environ={})
    for model_id in ANTHROPIC_MODELS:
        assert book.price(f"anthropic:{model_id}") is not None, model_id
    for model_id in OPENAI_MODELS:
        assert book.price(f"openai:{model_id}") is not None, model_id


def test_openai_is_priced_with_its_cached_input_price() -> None:
    # gpt-4.1: $2 input, $8 output, $0.50 cached input; OpenAI charges no cache write
    usage = Usage(input_tokens=1_000_000, cache_read_input_tokens=1_000_000, output_tokens=1_000_000)
    assert estimate_cost("openai:gpt-4.1", usage) == pytest.approx(2.0 + 0.5 + 8.0)


def test_claude_prices_per_model_not_per_family() -> None:
    usage = Usage(input_tokens=1_000_000)
    assert estimate_cost("anthropic:claude-opus-4-1", usage) == pytest.approx(15.0), "Opus 4.1 lists $15, not 4.5's $5"
    assert estimate_cost("anthropic:claude-opus-4-6", usage) == pytest.approx(5.0)
    assert estimate_cost("anthropic:claude-haiku-4-5-20251001", usage) == pytest.approx(1.0), "a dated id"


def test_bedrock_and_vertex_map_to_the_claude_prices() -> None:
    assert estimate_cost("bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0", MILLION) == pytest.approx(
        3 + 15 + 3.75 + 0.3)
    assert estimate_cost("vertex:claude-sonnet-4-5@20250929", MILLION) == pytest.approx(3 + 15 + 3.75 + 0.3)


def test_no_price_is_none_never_zero_and_scripted_is_zero() -> None:
    assert estimate_cost("openai-compatible:qwen3?base_url=http://127.0.0.1:1/v1", MILLION) is None
    assert estimate_cost("anthropic:claude-next-9", MILLION) is None
    assert estimate_cost("openai:gpt-99", MILLION) is None
    assert estimate_cost("scripted", MILLION) == 0.0


def test_a_registered_provider_carries_its_own_price_table() -> None:
    from longrun.providers.prices import Price

    reg = ProviderRegistry({"echo": ModelProvider(factory=lambda c: None,  # type: ignore[arg-type,return-value]
                                                  models={"v1": (1000, 100)}, prices={"v1": Price(1.0, 2.0)})},
                           entry_points=False)
    book = PriceBook(reg, environ={})
    assert book.cost("echo:v1", Usage(input_tokens=1_000_000, output_tokens=500_000)) == pytest.approx(2.0)
    assert book.cost("echo:v2", Usage(input_tokens=1)) is None


def test_longrun_prices_overrides_and_extends(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"openai-compatible:*": {"input": 0.1, "output": 0.2},
                                "anthropic:claude-sonnet-4-6": {"input": 2, "output": 10}}))
    book = PriceBook(environ={"LONGRUN_PRICES": str(path)})
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    assert book.cost("openai-compatible:qwen3", usage) == pytest.approx(0.3)
    assert book.cost("anthropic:claude-sonnet-4-6", usage) == pytest.approx(12.0), "the file wins over the table"
    assert book.cost("anthropic:claude-haiku-4-5", usage) == pytest.approx(6.0), "the rest keeps the table"
    toml = tmp_path / "prices.toml"
    toml.write_text('["openai-compatible:qwen3"]\ninput = 1\noutput = 1\n')
    assert PriceBook(environ={"LONGRUN_PRICES": str(toml)}).cost("openai-compatible:qwen3", usage) == pytest.approx(2.0)


def test_a_bad_price_file_says_what_to_fix(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"openai:gpt-5": {"input": 1}}))
    with pytest.raises(ConfigError, match="input and output"):
        PriceBook(environ={"LONGRUN_PRICES": str(path)}).price("openai:gpt-5")
    with pytest.raises(ConfigError, match="cannot read"):
        PriceBook(environ={"LONGRUN_PRICES": str(tmp_path / "missing.json")}).price("openai:gpt-5")
