"""`openai:` through the real `openai` SDK's Responses API, over real HTTP, against the local fake:
store=false, input items and call ids, reasoning items sent back verbatim, usage with cached
tokens, count_tokens, failures and the overflow refusal."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from longrun.context.state_block import render_state_block
from longrun.errors import ConfigError, ContextOverflow, FatalProviderError, RetryableProviderError
from longrun.models import Message, ModelRequest, TaskState, TextBlock, ToolResultBlock, ToolSpec, ToolUseBlock
from longrun.providers import get_provider, model_info
from longrun.providers.openai_responses import ITEM_KEY, OpenAIResponsesProvider
from longrun.tools.registry import MALFORMED_ARGUMENTS
from tests.fake_openai import FakeOpenAI

KEY = "sk-proj-fake-openai-key"
READ_FILE = ToolSpec(name="read_file", description="Read a file of the workspace.",
                     input_schema={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key=KEY) as f:
        yield f


@pytest.fixture
def provider(fake: FakeOpenAI) -> Iterator[Any]:
    p = get_provider("openai:gpt-5-mini", openai_api_key=KEY, openai_base_url=fake.url)
    yield p
    p.close()


def _request(*messages: Message) -> ModelRequest:
    return ModelRequest(model="openai:gpt-5-mini", system="You are a forensic code reviewer.", messages=list(messages),
                        tools=[READ_FILE], max_tokens=1024)


def _with_state(*blocks: Any) -> Message:
    state = TaskState(run_id="r1", state_version=3, objective="Review stats.py")
    return Message(role="user", content=[*blocks, TextBlock(text=render_state_block(state))])


def test_function_calls_round_trip_with_call_ids_and_store_false(provider: OpenAIResponsesProvider, fake: FakeOpenAI) -> None:
    assert provider.info == model_info("openai:gpt-5-mini") and provider.info.window == 272_000
    fake.enqueue([{"type": "thinking", "thinking": "Need the file first."},
                  {"type": "text", "text": "Reading it."},
                  {"type": "tool_use", "id": "call_01", "name": "read_file", "input": {"path": "stats.py"}}])
    first = provider.complete(_request(_with_state(TextBlock(text="Start."))))
    assert first.stop_reason == "tool_use" and [b.type for b in first.content] == ["thinking", "text", "tool_use"]
    use = first.content[2]
    assert isinstance(use, ToolUseBlock) and use.id == "call_01" and use.input == {"path": "stats.py"}
    reasoning = fake.responses_requests[0].response["output"][0]
    assert getattr(first.content[0], ITEM_KEY) == reasoning and reasoning["encrypted_content"]

    fake.enqueue_text("stats.py line 17 drops the last element.")
    second = provider.complete(_request(
        Message.user_text("Start."), Message(role="assistant", content=first.content),
        _with_state(ToolResultBlock(tool_use_id="call_01", content="     1\tdef f(): ..."))))
    assert second.stop_reason == "end_turn" and second.content[0].text.startswith("stats.py line 17")
    body = fake.responses_requests[-1].body
    assert fake.responses_requests[-1].headers["authorization"] == f"Bearer {KEY}"
    assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
    assert body["model"] == "gpt-5-mini" and body["max_output_tokens"] == 1024
    assert body["instructions"] == "You are a forensic code reviewer."
    assert body["tools"] == [{"type": "function", "name": "read_file", "description": READ_FILE.description,
                              "parameters": READ_FILE.input_schema, "strict": False}]
    kinds = [(i.get("type"), i.get("role")) for i in body["input"]]
    assert kinds == [("message", "user"), ("reasoning", None), ("message", "assistant"), ("function_call", None),
                     ("function_call_output", None), ("message", "user")]
    assert body["input"][1] == reasoning, "the reasoning item goes back exactly as it came"
    assert body["input"][3] == {"type": "function_call", "call_id": "call_01", "name": "read_file",
                                "arguments": '{"path": "stats.py"}'}
    assert body["input"][4] == {"type": "function_call_output", "call_id": "call_01", "output": "     1\tdef f(): ..."}
    assert "<task_state>" in body["input"][-1]["content"][-1]["text"]


def test_usage_maps_input_cached_and_output_tokens(provider: OpenAIResponsesProvider, fake: FakeOpenAI) -> None:
    history = [Message.user_text("Look at stats.py " * 60), Message(role="assistant", content=[TextBlock(text="ok")])]
    r1 = provider.complete(_request(*history, _with_state(TextBlock(text="go on"))))
    r2 = provider.complete(_request(*history, _with_state(TextBlock(text="go on, please"))))
    assert r1.usage.cache_read_input_tokens == 0 and r2.usage.cache_read_input_tokens > 0
    for r, rec in zip((r1, r2), fake.responses_requests, strict=True):
        u = rec.response["usage"]
        assert r.usage.total_input == u["input_tokens"] == len(fake.responses_token_stream(rec.body))
        assert r.usage.cache_read_input_tokens == u["input_tokens_details"]["cached_tokens"]
        assert r.usage.input_tokens == u["input_tokens"] - u["input_tokens_details"]["cached_tokens"]
        assert r.usage.output_tokens == u["output_tokens"] > 0


def test_count_tokens_asks_the_api(provider: OpenAIResponsesProvider, fake: FakeOpenAI) -> None:
    n = provider.count_tokens(_request(_with_state(TextBlock(text="How long is this?"))))
    rec = fake.requests[-1]
    assert rec.path == "/v1/responses/input_tokens" and n == rec.response["input_tokens"] > 0


def test_malformed_arguments_reach_the_registry_as_a_clear_error(provider: OpenAIResponsesProvider, fake: FakeOpenAI) -> None:
    fake.enqueue_tool_call("read_file", "[1, 2", id="call_bad")
    use = provider.complete(_request(_with_state(TextBlock(text="Start.")))).content[0]
    assert isinstance(use, ToolUseBlock) and use.id == "call_bad" and "not valid JSON" in use.input[MALFORMED_ARGUMENTS]


def test_429_is_retryable_with_retry_after_and_one_attempt(provider: OpenAIResponsesProvider, fake: FakeOpenAI) -> None:
    fake.fail_next(429, retry_after=2.5)
    with pytest.raises(RetryableProviderError) as info:
        provider.complete(_request(_with_state()))
    assert info.value.status == 429 and info.value.retry_after == 2.5 and len(fake.requests) == 1
    fake.fail_next(500)
    with pytest.raises(RetryableProviderError):
        provider.complete(_request(_with_state()))


def test_context_length_exceeded_is_an_overflow(provider: OpenAIResponsesProvider, fake: FakeOpenAI) -> None:
    fake.window = 200
    with pytest.raises(ContextOverflow, match="exceeds the context window"):
        provider.complete(_request(_with_state(TextBlock(text="word " * 300))))


def test_a_stored_item_reference_is_refused_under_store_false(provider: OpenAIResponsesProvider, fake: FakeOpenAI) -> None:
    """The fake enforces what store=false means: the adapter never sends a stored item's id alone."""
    stale = Message(role="assistant", content=[TextBlock.model_validate(
        {"type": "text", "text": "[item_reference item]", ITEM_KEY: {"type": "item_reference", "id": "msg_old"}})])
    with pytest.raises(FatalProviderError, match="not persisted"):
        provider.complete(_request(Message.user_text("Start."), stale, _with_state()))


def test_no_key_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        get_provider("openai:gpt-5")
    assert model_info("openai:some-new-model").window == 128_000
