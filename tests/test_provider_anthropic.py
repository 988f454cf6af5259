"""The Anthropic adapter through the real SDK, over real HTTP, against the local fake server."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest

from longrun.context.state_block import render_state_block
from longrun.errors import ConfigError, ContextOverflow, FatalProviderError, RetryableProviderError
from longrun.models import (
    Message,
    ModelRequest,
    TaskState,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
)
from longrun.providers import AnthropicProvider, ModelSummarizer, ScriptedProvider, get_provider, model_info
from tests.fake_anthropic import FakeAnthropic, fake_token_count

MODEL = "anthropic:claude-sonnet-4-6"
READ_FILE = ToolSpec(
    name="read_file",
    description="Read a file of the workspace.",
    input_schema={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)


@pytest.fixture
def provider(fake_anthropic: FakeAnthropic, fake_api_key: str) -> Any:
    p = get_provider(MODEL, api_key=fake_api_key, base_url=fake_anthropic.url)
    yield p
    p.close()


def _state() -> TaskState:
    return TaskState(run_id="r1", state_version=3, objective="Review stats.py", constraints=["do not modify tests/"])


def _request(*messages: Message) -> ModelRequest:
    return ModelRequest(model=MODEL, system="You are a forensic code reviewer.", messages=list(messages),
                        tools=[READ_FILE], max_tokens=1024)


def _with_state(*blocks: Any) -> Message:
    return Message(role="user", content=[*blocks, TextBlock(text=render_state_block(_state()))])


def test_tool_use_round_trip(provider: AnthropicProvider, fake_anthropic: FakeAnthropic, fake_api_key: str) -> None:
    fake_anthropic.enqueue_tool_use("read_file", {"path": "stats.py"}, id="toolu_01", text="Reading it.")
    first = provider.complete(_request(_with_state(TextBlock(text="Start."))))
    assert first.stop_reason == "tool_use"
    assert [b.type for b in first.content] == ["text", "tool_use"]
    use = [b for b in first.content if b.type == "tool_use"]
    assert isinstance(use[0], ToolUseBlock) and use[0].input == {"path": "stats.py"} and use[0].id == "toolu_01"

    fake_anthropic.enqueue_text("stats.py line 17 drops the last element.")
    second = provider.complete(_request(
        Message.user_text("Start."),
        Message(role="assistant", content=first.content),
        _with_state(ToolResultBlock(tool_use_id="toolu_01", content="     1\tdef f(): ...")),
    ))
    assert second.stop_reason == "end_turn" and second.content[0].text.startswith("stats.py line 17")

    sent = fake_anthropic.message_requests[-1]
    # SDK 2.x sends the key as a bearer token; older ones as x-api-key.
    credential = sent.headers.get("x-api-key") or sent.headers.get("authorization", "").removeprefix("Bearer ")
    assert credential == fake_api_key and "anthropic-version" in sent.headers
    body = sent.body
    assert body["model"] == "claude-sonnet-4-6" and body["max_tokens"] == 1024
    assert body["tools"] == [READ_FILE.model_dump()]
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][1]["content"][1] == {"type": "tool_use", "id": "toolu_01", "name": "read_file",
                                                 "input": {"path": "stats.py"}}
    last = body["messages"][2]["content"]
    assert last[0]["type"] == "tool_result" and last[0]["tool_use_id"] == "toolu_01"
    assert last[-1]["type"] == "text" and "<task_state>" in last[-1]["text"]
    # The cache breakpoint sits just before the state block, which changes every turn.
    assert last[0]["cache_control"] == {"type": "ephemeral"} and "cache_control" not in last[-1]
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}


def test_usage_records_cache_fields(provider: AnthropicProvider, fake_anthropic: FakeAnthropic) -> None:
    history = [Message.user_text("Look at stats.py " * 50), Message(role="assistant", content=[TextBlock(text="ok")])]
    r1 = provider.complete(_request(*history, _with_state(TextBlock(text="go on"))))
    r2 = provider.complete(_request(*history, _with_state(TextBlock(text="go on, please"))))
    assert r1.usage.cache_read_input_tokens == 0 and r1.usage.cache_creation_input_tokens > 0
    assert r2.usage.cache_read_input_tokens > 0
    for r, rec in zip((r1, r2), fake_anthropic.message_requests, strict=False):
        # The total the window holds is what the fake's own tokenizer counted for that request.
        assert r.usage.total_input == fake_token_count(rec.body) == rec.response["usage"]["input_tokens"] + rec.response[
            "usage"]["cache_read_input_tokens"] + rec.response["usage"]["cache_creation_input_tokens"]
        assert r.usage.output_tokens == rec.response["usage"]["output_tokens"] > 0


def test_count_tokens_uses_the_api(provider: AnthropicProvider, fake_anthropic: FakeAnthropic) -> None:
    request = _request(_with_state(TextBlock(text="How long is this?")))
    n = provider.count_tokens(request)
    rec = fake_anthropic.requests[-1]
    assert rec.path == "/v1/messages/count_tokens" and "max_tokens" not in rec.body
    assert n == fake_token_count(rec.body)


def test_429_with_retry_after_is_retryable(provider: AnthropicProvider, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.fail_next(429, retry_after=7)
    with pytest.raises(RetryableProviderError) as info:
        provider.complete(_request(_with_state()))
    assert info.value.status == 429 and info.value.retry_after == 7.0
    assert len(fake_anthropic.requests) == 1, "max_retries=0: the SDK must not retry on its own"


@pytest.mark.parametrize("status", [408, 409, 500, 503, 529])
def test_transient_statuses_are_retryable(provider: AnthropicProvider, fake_anthropic: FakeAnthropic, status: int) -> None:
    fake_anthropic.fail_next(status)
    with pytest.raises(RetryableProviderError) as info:
        provider.complete(_request(_with_state()))
    assert info.value.status == status and info.value.retry_after is None
    assert len(fake_anthropic.requests) == 1
    assert provider.complete(_request(_with_state())).stop_reason == "end_turn", "the next attempt goes through"


def test_prompt_too_long_is_context_overflow(provider: AnthropicProvider, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.window = 50
    with pytest.raises(ContextOverflow, match="prompt is too long"):
        provider.complete(_request(_with_state(TextBlock(text="word " * 100))))
    assert fake_anthropic.requests[-1].status == 400
    fake_anthropic.window = 200_000
    fake_anthropic.fail_next(413, message="Request exceeds the maximum allowed number of bytes.")
    with pytest.raises(ContextOverflow, match="413"):
        provider.complete(_request(_with_state()))


def test_context_window_exceeded_stop_is_context_overflow(provider: AnthropicProvider, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue_response({"content": [{"type": "text", "text": "partial"}],
                                     "stop_reason": "model_context_window_exceeded"})
    with pytest.raises(ContextOverflow, match="model_context_window_exceeded"):
        provider.complete(_request(_with_state()))


def test_other_4xx_are_fatal_with_the_api_message(provider: AnthropicProvider, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.fail_next(403, message="Your API key does not have permission to use the specified resource.")
    with pytest.raises(FatalProviderError, match="does not have permission") as info:
        provider.complete(_request(_with_state()))
    assert info.value.status == 403
    fake_anthropic.enqueue_error(400, "messages.0.content: bad block")
    with pytest.raises(FatalProviderError, match="bad block"):
        provider.complete(_request(_with_state()))


@pytest.mark.parametrize("orphan", ["tool_use", "tool_result"])
def test_orphaned_tool_id_is_caught_before_sending(provider: AnthropicProvider, fake_anthropic: FakeAnthropic,
                                                    orphan: str) -> None:
    use = ToolUseBlock(id="toolu_lost", name="read_file", input={"path": "a.py"})
    if orphan == "tool_use":
        messages = [Message.user_text("go"), Message(role="assistant", content=[use]), _with_state(TextBlock(text="?"))]
    else:
        messages = [Message.user_text("go"), Message(role="assistant", content=[TextBlock(text="hm")]),
                    _with_state(ToolResultBlock(tool_use_id="toolu_lost", content="x"))]
    with pytest.raises(FatalProviderError, match="toolu_lost"):
        provider.complete(_request(*messages))
    with pytest.raises(FatalProviderError, match="toolu_lost"):
        provider.count_tokens(_request(*messages))
    assert fake_anthropic.requests == [], "nothing may be sent"


def test_the_fake_rejects_orphans_like_the_api(fake_anthropic: FakeAnthropic, fake_api_key: str) -> None:
    """The check the adapter makes is the one the API (and the fake) would answer 400 for."""
    import anthropic

    client = anthropic.Anthropic(api_key=fake_api_key, base_url=fake_anthropic.url, max_retries=0, timeout=10)
    with client, pytest.raises(anthropic.BadRequestError, match="without `tool_result`"):
        client.messages.create(model="claude-sonnet-4-6", max_tokens=10, messages=[
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}]},
            {"role": "user", "content": "and?"},
        ])


def test_internal_keys_dropped_and_same_role_merged(provider: AnthropicProvider, fake_anthropic: FakeAnthropic) -> None:
    tagged = TextBlock.model_validate({"type": "text", "text": "earlier", "longrun_seq": 4, "longrun_artifact": "ab"})
    result = ToolResultBlock.model_validate(
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "out", "longrun_cleared": True})
    provider.complete(_request(
        Message(role="user", content=[tagged]),
        Message(role="user", content=[TextBlock(text="more")]),
        Message(role="assistant", content=[ToolUseBlock(id="toolu_1", name="read_file", input={"path": "a"})]),
        _with_state(result),
    ))
    body = fake_anthropic.message_requests[-1].body
    assert fake_anthropic.message_requests[-1].status == 200
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert [b["text"] for b in body["messages"][0]["content"]] == ["earlier", "more"]
    assert "longrun_" not in str(body)


def test_thinking_of_an_open_tool_cycle_is_sent_back_unmodified(provider: AnthropicProvider,
                                                                 fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue_response({"content": [
        {"type": "thinking", "thinking": "The slice looks off.", "signature": "sig-abc=="},
        {"type": "tool_use", "id": "toolu_t", "name": "read_file", "input": {"path": "stats.py"}},
    ]})
    first = provider.complete(_request(_with_state(TextBlock(text="Start."))))
    assert isinstance(first.content[0], ThinkingBlock) and first.content[0].signature == "sig-abc=="
    provider.complete(_request(
        Message.user_text("Start."),
        Message(role="assistant", content=first.content),
        _with_state(ToolResultBlock(tool_use_id="toolu_t", content="x")),
    ))
    sent = fake_anthropic.message_requests[-1].body["messages"][1]["content"][0]
    assert sent == {"type": "thinking", "thinking": "The slice looks off.", "signature": "sig-abc=="}


def test_no_request_leaves_localhost(provider: AnthropicProvider, fake_anthropic: FakeAnthropic) -> None:
    provider.complete(_request(_with_state()))
    provider.count_tokens(_request(_with_state()))
    assert urlsplit(provider.base_url).hostname == "127.0.0.1"
    assert urlsplit(str(provider.client.base_url)).hostname == "127.0.0.1"
    assert provider.client.max_retries == 0
    assert len(fake_anthropic.requests) == 2
    assert {r.client_host for r in fake_anthropic.requests} == {"127.0.0.1"}


def test_max_tokens_capped_at_the_model_output(fake_anthropic: FakeAnthropic, fake_api_key: str) -> None:
    p = get_provider("anthropic:claude-3-5-haiku", api_key=fake_api_key, base_url=fake_anthropic.url)
    try:
        p.complete(_request(_with_state()).model_copy(update={"max_tokens": 100_000}))
    finally:
        p.close()
    assert fake_anthropic.message_requests[-1].body["max_tokens"] == 8_192


def test_get_provider_and_model_table(monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(get_provider("scripted"), ScriptedProvider)
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        get_provider(MODEL)
    with pytest.raises(ConfigError, match="unknown model"):
        get_provider("gpt-4")
    assert model_info("scripted").window == 200_000
    assert model_info("anthropic:claude-sonnet-4-6").window == 1_000_000
    assert model_info("anthropic:claude-opus-4-6").max_output == 128_000
    assert model_info("anthropic:claude-haiku-4-5-20251001").window == 200_000
    assert model_info("anthropic:claude-opus-4-20250514").max_output == 32_000
    unknown = model_info("anthropic:claude-next-9")
    assert (unknown.window, unknown.max_output) == (200_000, 8_192)
    with pytest.raises(ConfigError):
        model_info("anthropic:")


def test_model_summarizer_through_the_fake(provider: AnthropicProvider, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue_text(
        "Here it is:\n<summary_of_earlier_work>\n## Goal\nReview stats.py\n## Progress\nread it\n## Facts\n"
        "line 17 slice\n## Decisions\nnone\n## Next step\npatch\n</summary_of_earlier_work>")
    messages = [
        Message.user_text("Start."),
        Message(role="assistant", content=[ToolUseBlock(id="toolu_1", name="read_file", input={"path": "stats.py"})]),
        Message(role="user", content=[ToolResultBlock(tool_use_id="toolu_1", content="  17\tchunk = values[a:b - 1]")]),
    ]
    summary = ModelSummarizer(provider).summarize(messages, "<summary_of_earlier_work>\n## Goal\nold\n"
                                                  "</summary_of_earlier_work>", _state(), 500)
    assert summary.startswith("<summary_of_earlier_work>\n## Goal\nReview stats.py")
    assert summary.endswith("</summary_of_earlier_work>") and "Here it is" not in summary
    body = fake_anthropic.message_requests[-1].body
    prompt = body["messages"][0]["content"][0]["text"]
    assert "chunk = values[a:b - 1]" in prompt and "## Goal\nold" in prompt and "Review stats.py" in prompt
    assert body["max_tokens"] == 500
    assert all(s in body["system"][0]["text"] for s in ("Goal", "Progress", "Facts", "Decisions", "Next step"))


def test_scripted_policy_behind_the_fake(provider: AnthropicProvider, fake_anthropic: FakeAnthropic) -> None:
    """Other suites can run the scripted agent as `anthropic:<id>` over real HTTP."""
    from tests.fake_anthropic import scripted_policy

    fake_anthropic.set_policy(scripted_policy())
    request = _request(_with_state(TextBlock(text="Start.")))
    over_http = provider.complete(request)
    direct = ScriptedProvider().complete(request)
    assert [b.type for b in over_http.content] == ["text", "tool_use"]
    assert over_http.content[1].name == direct.content[1].name == "list_dir"
    assert over_http.usage.total_input == fake_token_count(fake_anthropic.message_requests[-1].body)
