"""`openai-compatible:` through the real `openai` SDK, over real HTTP, against the local fake
Chat Completions server: request shape, tool calls and ids, usage with cached tokens, failures,
the overflow refusal, malformed tool-call JSON, and where the key and base URL come from."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from longrun.context.state_block import render_state_block
from longrun.errors import ConfigError, ContextOverflow, FatalProviderError, RetryableProviderError
from longrun.models import Message, ModelRequest, TaskState, TextBlock, ToolResultBlock, ToolSpec, ToolUseBlock
from longrun.models.spec import RunSpec, model_key
from longrun.providers import get_provider, model_info
from longrun.providers.openai_chat import OpenAICompatibleProvider
from longrun.tools import default_registry
from longrun.tools.registry import MALFORMED_ARGUMENTS
from tests.fake_openai import FakeOpenAI, chat_token_stream

KEY = "sk-local-fake-key"
READ_FILE = ToolSpec(name="read_file", description="Read a file of the workspace.",
                     input_schema={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key=KEY) as f:
        yield f


@pytest.fixture
def provider(fake: FakeOpenAI) -> Iterator[Any]:
    p = get_provider(model_key("openai-compatible:qwen3", base_url=fake.url, context_window=65_536),
                     compatible_api_key=KEY)
    yield p
    p.close()


def _state() -> TaskState:
    return TaskState(run_id="r1", state_version=3, objective="Review stats.py", constraints=["do not modify tests/"])


def _request(*messages: Message) -> ModelRequest:
    return ModelRequest(model="openai-compatible:qwen3", system="You are a forensic code reviewer.",
                        messages=list(messages), tools=[READ_FILE], max_tokens=1024)


def _with_state(*blocks: Any) -> Message:
    return Message(role="user", content=[*blocks, TextBlock(text=render_state_block(_state()))])


def test_tool_call_round_trip_keeps_ids_and_roles(provider: OpenAICompatibleProvider, fake: FakeOpenAI) -> None:
    assert provider.name == "openai-compatible:qwen3" and provider.info.window == 65_536
    fake.enqueue_tool_call("read_file", {"path": "stats.py"}, id="call_01", text="Reading it.")
    first = provider.complete(_request(_with_state(TextBlock(text="Start."))))
    assert first.stop_reason == "tool_use" and [b.type for b in first.content] == ["text", "tool_use"]
    use = first.content[1]
    assert isinstance(use, ToolUseBlock) and use.id == "call_01" and use.input == {"path": "stats.py"}

    fake.enqueue_text("stats.py line 17 drops the last element.")
    second = provider.complete(_request(
        Message.user_text("Start."), Message(role="assistant", content=first.content),
        _with_state(ToolResultBlock(tool_use_id="call_01", content="     1\tdef f(): ...")),
    ))
    assert second.stop_reason == "end_turn" and second.content[0].text.startswith("stats.py line 17")
    sent = fake.chat_requests[-1]
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    body = sent.body
    assert body["model"] == "qwen3" and body["max_tokens"] == 1024 and body["stream"] is False
    assert body["tools"] == [{"type": "function", "function": {"name": "read_file", "description": READ_FILE.description,
                                                               "parameters": READ_FILE.input_schema}}]
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "tool", "user"]
    assert body["messages"][2]["tool_calls"] == [{"id": "call_01", "type": "function",
                                                  "function": {"name": "read_file", "arguments": '{"path": "stats.py"}'}}]
    assert body["messages"][3] == {"role": "tool", "tool_call_id": "call_01", "content": "     1\tdef f(): ..."}
    # the state block is the very last thing: everything before it is a stable, cacheable prefix
    assert "<task_state>" in body["messages"][-1]["content"][-1]["text"]


def test_usage_maps_prompt_and_cached_tokens(provider: OpenAICompatibleProvider, fake: FakeOpenAI) -> None:
    history = [Message.user_text("Look at stats.py " * 60), Message(role="assistant", content=[TextBlock(text="ok")])]
    r1 = provider.complete(_request(*history, _with_state(TextBlock(text="go on"))))
    r2 = provider.complete(_request(*history, _with_state(TextBlock(text="go on, please"))))
    assert r1.usage.cache_read_input_tokens == 0
    assert r2.usage.cache_read_input_tokens > 0 and r2.usage.cache_read_input_tokens % 16 == 0
    for r, rec in zip((r1, r2), fake.chat_requests, strict=True):
        u = rec.response["usage"]
        assert r.usage.total_input == u["prompt_tokens"] == len(chat_token_stream(rec.body))
        assert r.usage.cache_read_input_tokens == u["prompt_tokens_details"]["cached_tokens"]
        assert r.usage.output_tokens == u["completion_tokens"] > 0


def test_malformed_tool_call_json_becomes_a_clear_error_for_the_tool(
    provider: OpenAICompatibleProvider, fake: FakeOpenAI
) -> None:
    fake.enqueue_tool_call("read_file", '{"path": "stats.py"', id="call_bad")
    response = provider.complete(_request(_with_state(TextBlock(text="Start."))))
    use = response.content[0]
    assert isinstance(use, ToolUseBlock) and use.id == "call_bad" and MALFORMED_ARGUMENTS in use.input
    with pytest.raises(Exception) as info:
        default_registry().validate_arguments("read_file", use.input)
    message = str(info.value)
    assert "not valid JSON" in message and '{"path": "stats.py"' in message and "one JSON object" in message
    # sent back, the call's arguments are valid JSON (the marker is longrun's, and stripped)
    provider.complete(_request(Message.user_text("Start."), Message(role="assistant", content=response.content),
                               _with_state(ToolResultBlock(tool_use_id="call_bad", content=message, is_error=True))))
    body = fake.chat_requests[-1].body
    assert body["messages"][2]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert body["messages"][3]["content"].startswith("ERROR: invalid arguments for read_file")


def test_429_with_retry_after_is_retryable_and_not_retried_by_the_sdk(
    provider: OpenAICompatibleProvider, fake: FakeOpenAI
) -> None:
    fake.fail_next(429, retry_after=7)
    with pytest.raises(RetryableProviderError) as info:
        provider.complete(_request(_with_state()))
    assert info.value.status == 429 and info.value.retry_after == 7.0
    assert len(fake.requests) == 1, "max_retries=0: the SDK must not retry on its own"


@pytest.mark.parametrize("status", [500, 503])
def test_server_errors_are_retryable(provider: OpenAICompatibleProvider, fake: FakeOpenAI, status: int) -> None:
    fake.fail_next(status)
    with pytest.raises(RetryableProviderError) as info:
        provider.complete(_request(_with_state()))
    assert info.value.status == status


def test_context_length_refusal_is_an_overflow_with_the_servers_numbers(
    provider: OpenAICompatibleProvider, fake: FakeOpenAI
) -> None:
    fake.window = 300
    with pytest.raises(ContextOverflow) as info:
        provider.complete(_request(_with_state(TextBlock(text="word " * 400))))
    assert "prompt is too long:" in str(info.value) and "> 300 maximum" in str(info.value)
    assert "maximum context length is 300 tokens" in str(info.value)


def test_a_refused_key_is_fatal_and_says_where_the_key_lives(fake: FakeOpenAI) -> None:
    p = get_provider(model_key("openai-compatible:qwen3", base_url=fake.url), compatible_api_key="wrong")
    with pytest.raises(FatalProviderError) as info:
        p.complete(_request(_with_state()))
    assert info.value.status == 401 and "check the worker's key" in str(info.value)


def test_an_orphaned_tool_call_fails_before_anything_is_sent(provider: OpenAICompatibleProvider, fake: FakeOpenAI) -> None:
    orphan = Message(role="assistant", content=[ToolUseBlock(id="call_x", name="read_file", input={"path": "a"})])
    with pytest.raises(FatalProviderError, match="orphaned tool_use call_x"):
        provider.complete(_request(Message.user_text("Start."), orphan, _with_state(TextBlock(text="go"))))
    assert fake.requests == []


def test_no_key_sends_a_placeholder_never_openais_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-must-not-travel")
    with FakeOpenAI() as fake:
        p = get_provider(model_key("openai-compatible:llama3", base_url=fake.url), openai_api_key="sk-proj-must-not-travel")
        p.complete(_request(_with_state()))
    assert fake.requests[0].headers["authorization"] == "Bearer no-key"


def test_base_url_from_the_workers_environment_and_a_clear_error_without_one(fake: FakeOpenAI) -> None:
    p = get_provider("openai-compatible:qwen3", compatible_base_url=fake.url, compatible_api_key=KEY)
    assert p.info.window == model_info("openai-compatible:qwen3").window == 32_768
    p.complete(_request(_with_state()))
    assert fake.chat_requests
    with pytest.raises(ConfigError, match="--base-url"):
        get_provider("openai-compatible:qwen3")


def test_the_spec_keeps_the_url_and_window_but_refuses_credentials_in_it(tmp_path: Any) -> None:
    spec = RunSpec(objective="x", workspace=str(tmp_path), model="openai-compatible:qwen3",
                   base_url="http://127.0.0.1:11434/v1/", context_window=40_960)
    assert spec.base_url == "http://127.0.0.1:11434/v1"
    assert spec.provider_key() == "openai-compatible:qwen3?base_url=http%3A%2F%2F127.0.0.1%3A11434%2Fv1&window=40960"
    assert model_info(spec.provider_key()).window == 40_960
    assert RunSpec(objective="x", workspace=str(tmp_path), model="anthropic:claude-haiku-4-5").provider_key() \
        == "anthropic:claude-haiku-4-5"
    for bad in ("http://user:sk-secret@host/v1", "http://host/v1?key=sk-secret", "ftp://host/v1"):
        with pytest.raises(ValueError, match="base_url"):
            RunSpec(objective="x", workspace=str(tmp_path), model="openai-compatible:qwen3", base_url=bad)
    with pytest.raises(ValueError, match="model must be"):
        RunSpec(objective="x", workspace=str(tmp_path), model="openai-compatible:")


def test_the_documented_start_command_builds_this_spec(tmp_path: Any) -> None:
    """`longrun start --model openai-compatible:qwen3 --base-url http://127.0.0.1:11434/v1 ...`, as the
    README shows it: the URL and window go into the spec, never a key."""
    from longrun.cli import build_parser
    from longrun.cli.commands.start import build_spec

    args = build_parser().parse_args([
        "start", "--model", "openai-compatible:qwen3", "--base-url", "http://127.0.0.1:11434/v1",
        "--context-window", "40960", "--objective", "Review stats.py", "--workspace", str(tmp_path),
    ])
    spec = build_spec(args)
    assert (spec.model, spec.base_url, spec.context_window) == ("openai-compatible:qwen3", "http://127.0.0.1:11434/v1",
                                                                40_960)
    wrong = build_parser().parse_args(["start", "--model", "scripted", "--base-url", "http://x/v1", "--objective", "o",
                                       "--workspace", str(tmp_path)])
    from longrun.cli.commands.common import CliError

    with pytest.raises(CliError, match="--base-url and --context-window are for openai-compatible"):
        build_spec(wrong)


def test_the_workers_key_goes_only_to_the_workers_own_server(fake: FakeOpenAI) -> None:
    """A spec may name any server; the worker's key is only sent to the one the worker pins."""
    with FakeOpenAI() as other:
        p = get_provider(model_key("openai-compatible:qwen3", base_url=other.url), compatible_api_key=KEY,
                         compatible_base_url=fake.url)
        p.complete(_request(_with_state()))
    assert other.requests[0].headers["authorization"] == "Bearer no-key"
    same = get_provider(model_key("openai-compatible:qwen3", base_url=fake.url + "/"), compatible_api_key=KEY,
                        compatible_base_url=fake.url)
    same.complete(_request(_with_state()))
    assert fake.requests[-1].headers["authorization"] == f"Bearer {KEY}"
