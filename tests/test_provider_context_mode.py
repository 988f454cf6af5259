"""`context.mode` provider / hybrid at the provider: what goes on the wire per mode, and what the
answer's report becomes, over the real SDKs and real HTTP against the local fakes, which
implement Anthropic's clear_tool_uses and server compaction and OpenAI's compaction as documented.
Also `should_compact` per mode and the `--context-mode` flag."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

from longrun.activities.provider_context import calibration_after, record
from longrun.context import Calibration, should_compact
from longrun.context.state_block import render_state_block
from longrun.models import Message, ModelRequest, TaskState, TextBlock, ToolResultBlock, ToolSpec, ToolUseBlock
from longrun.models.provider import ProviderContext
from longrun.models.spec import ContextPolicy
from longrun.providers import get_provider
from longrun.providers.openai_responses import ITEM_KEY
from longrun.providers.provider_context import COMPACT_BETA, CONTEXT_BETA, PROVIDER_BLOCK_KEY
from tests.fake_anthropic import FakeAnthropic, fake_token_count, request_token_stream
from tests.fake_anthropic_context import CLEARED
from tests.fake_openai import FakeOpenAI
from tests.fixtures.anthropic import FAKE_API_KEY

OPENAI_KEY = "sk-proj-fake-openai-key"
READ = ToolSpec(name="read_file", description="Read a file.",
                input_schema={"type": "object", "properties": {"path": {"type": "string"}}})
NOTE = ToolSpec(name="write_note", description="Keep a note.",
                input_schema={"type": "object", "properties": {"text": {"type": "string"}}})
STATE = TaskState(run_id="run-ctx", state_version=1, objective="Find the defect in the stats helper.",
                  constraints=["never push"])


def conversation(uses: int, *, words: int = 300, note_at: int | None = None) -> list[Message]:
    """`uses` tool turns, each result `words` words long, and the state block last."""
    messages = [Message.user_text("Review the stats helper.")]
    for i in range(uses):
        name = "write_note" if i == note_at else "read_file"
        messages.append(Message(role="assistant", content=[
            TextBlock(text=f"Reading part {i}."), ToolUseBlock(id=f"toolu_{i:03d}", name=name, input={"path": f"p{i}.py"})]))
        messages.append(Message(role="user", content=[
            ToolResultBlock(tool_use_id=f"toolu_{i:03d}", content=" ".join(f"line{i} word" for _ in range(words // 2)))]))
    messages[-1] = Message(role="user", content=[*messages[-1].content, TextBlock(text=render_state_block(STATE))])
    return messages


def request(messages: list[Message], ctx: ProviderContext | None, model: str = "anthropic:claude-sonnet-4-6") -> ModelRequest:
    return ModelRequest(model=model, system="You review code.", messages=messages, tools=[READ, NOTE],
                        max_tokens=512, context=ctx)


def ctx(**update: Any) -> ProviderContext:
    fields: dict[str, Any] = {"mode": "provider", "trigger": 2_000, "keep": 2, "clear_at_least": 100}
    fields.update(update)
    return ProviderContext(**fields)


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(min_compaction_trigger=1_000) as f:
        yield f


@pytest.fixture
def claude(fake: FakeAnthropic) -> Iterator[Any]:
    p = get_provider("anthropic:claude-sonnet-4-6", api_key=FAKE_API_KEY, base_url=fake.url)
    yield p
    p.close()


# -- the policy's parameters ------------------------------------------------------------------


def test_client_mode_asks_the_provider_for_nothing() -> None:
    assert ContextPolicy().mode == "client" and ContextPolicy().provider_context(200_000) is None


def test_the_policys_own_parameters_are_what_the_provider_gets() -> None:
    policy = ContextPolicy(mode="hybrid", trigger=30_000, keep=4, clear_at_least=5_000, exclude_tools=["write_note"],
                           clear_tool_inputs=True, provider_compaction=True, compaction_instructions="Keep paths.")
    got = policy.provider_context(200_000)
    assert got == ProviderContext(mode="hybrid", trigger=30_000, keep=4, clear_at_least=5_000,
                                  exclude_tools=("write_note",), clear_tool_inputs=True, compaction=True,
                                  compaction_trigger=50_000, instructions="Keep paths.")


def test_provider_mode_turns_off_longruns_threshold_but_not_the_hard_limit() -> None:
    window = 200_000
    for mode, expected in (("client", "threshold"), ("hybrid", "threshold"), ("provider", None)):
        policy = ContextPolicy(mode=mode, trigger=10_000)
        assert should_compact(12_000, policy=policy, window=window, last_compaction_turn=None, turn=5) == expected
        assert should_compact(12_000, policy=policy, window=window, last_compaction_turn=None, turn=5,
                              stage_boundary=True) == ("stage_boundary" if expected else None)
    provider = ContextPolicy(mode="provider", trigger=10_000)
    over = provider.limit(window) + 1
    assert should_compact(over, policy=provider, window=window, last_compaction_turn=None, turn=5) == "threshold"
    assert should_compact(1, policy=provider, window=window, last_compaction_turn=None, turn=5,
                          operator=True) == "operator"


# -- Anthropic: request shaping ---------------------------------------------------------------


def test_anthropic_client_mode_sends_no_context_management(claude: Any, fake: FakeAnthropic) -> None:
    response = claude.complete(request(conversation(2), None))
    sent = fake.message_requests[-1]
    assert "context_management" not in sent.body and CONTEXT_BETA not in sent.headers.get("anthropic-beta", "")
    assert response.context is None


def test_anthropic_provider_mode_sends_the_edits_with_their_beta(claude: Any, fake: FakeAnthropic) -> None:
    claude.complete(request(conversation(2), ctx(exclude_tools=("write_note",), clear_tool_inputs=True)))
    sent = fake.message_requests[-1]
    assert sent.status == 200, sent.response
    assert sent.headers["anthropic-beta"].split(",") == [CONTEXT_BETA]
    assert sent.body["context_management"] == {"edits": [{
        "type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 2_000},
        "keep": {"type": "tool_uses", "value": 2}, "clear_at_least": {"type": "input_tokens", "value": 100},
        "clear_tool_inputs": True, "exclude_tools": ["write_note"]}]}

    claude.complete(request(conversation(2), ctx(compaction=True, compaction_trigger=40_000, instructions="Keep paths.")))
    sent = fake.message_requests[-1]
    assert sent.status == 200, sent.response
    assert set(sent.headers["anthropic-beta"].split(",")) == {CONTEXT_BETA, COMPACT_BETA}
    assert sent.body["context_management"]["edits"][1] == {
        "type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 40_000}, "instructions": "Keep paths."}


def test_the_fake_refuses_context_management_without_its_beta_or_in_a_wrong_shape(fake: FakeAnthropic) -> None:
    client = anthropic.Anthropic(api_key=FAKE_API_KEY, base_url=fake.url, max_retries=0)
    base = {"model": "claude-sonnet-4-6", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    edit = {"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 5}}
    with pytest.raises(anthropic.BadRequestError, match="beta"):
        client.messages.create(**base, extra_body={"context_management": {"edits": [edit]}})
    with pytest.raises(anthropic.BadRequestError, match="keep"):
        client.beta.messages.create(**base, betas=[CONTEXT_BETA], context_management={"edits": [  # type: ignore[arg-type]
            {**edit, "keep": {"type": "input_tokens", "value": 3}}]})
    with pytest.raises(anthropic.BadRequestError, match="at least 1000"):
        client.beta.messages.create(**base, betas=[CONTEXT_BETA, COMPACT_BETA], context_management={"edits": [
            {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 999}}]})
    client.close()


# -- Anthropic: clearing ----------------------------------------------------------------------


def test_anthropic_clears_old_results_past_keep_and_says_so(claude: Any, fake: FakeAnthropic) -> None:
    messages = conversation(6, note_at=1)
    short = conversation(3, note_at=1)
    claude.complete(request(short, ctx(exclude_tools=("write_note",))))  # under the trigger: nothing cleared
    first = fake.message_requests[-1]
    assert first.response["context_management"] == {"applied_edits": []}
    response = claude.complete(request(messages, ctx(exclude_tools=("write_note",))))
    sent = fake.message_requests[-1]
    assert fake_token_count(sent.body) > 2_000

    # six tool uses, keep 2, write_note excluded: three results cleared
    [edit] = sent.response["context_management"]["applied_edits"]
    assert edit["type"] == "clear_tool_uses_20250919" and edit["cleared_tool_uses"] == 3
    assert response.context is not None
    assert (response.context.cleared_tool_uses, response.context.cleared_input_tokens) == (3, edit["cleared_input_tokens"])
    assert response.context.applied_edits == [edit] and not response.context.compacted
    # what the model was billed for is the cleared request, and longrun's transcript is unchanged
    assert response.usage.total_input == fake_token_count(sent.body) - edit["cleared_input_tokens"]
    assert all(CLEARED not in str(b) for m in messages for b in m.content)
    # the cache: the prefix is read only up to the first cleared block (the first tool result),
    # though the request before held the same first turns
    first_result = next(i for i, m in enumerate(sent.body["messages"])
                        if any(b.get("type") == "tool_result" for b in m["content"]))
    prefix, _ = request_token_stream({**sent.body, "messages": sent.body["messages"][:first_result + 1]})
    assert 0 < response.usage.cache_read_input_tokens < len(prefix)
    assert response.usage.cache_read_input_tokens < first.response["usage"]["cache_creation_input_tokens"]
    # calibration compares like with like: what was cleared is added back
    assert calibration_after(Calibration(), 1_000, request(messages, ctx()), response) == Calibration().update(
        1_000, response.usage.total_input + edit["cleared_input_tokens"])


def test_clear_at_least_holds_the_clearing_back(claude: Any, fake: FakeAnthropic) -> None:
    response = claude.complete(request(conversation(6), ctx(clear_at_least=100_000)))
    assert fake.message_requests[-1].response["context_management"] == {"applied_edits": []}
    assert response.context is None


# -- Anthropic: server compaction --------------------------------------------------------------


def test_anthropic_compaction_block_is_kept_verbatim_and_sent_back(claude: Any, fake: FakeAnthropic) -> None:
    fake.compaction_summary = lambda body: "Summary: the helper's window is off by one in stats.py."
    messages = conversation(6)
    compacting = ctx(trigger=100_000, compaction=True, compaction_trigger=2_000)
    response = claude.complete(request(messages, compacting))
    returned = fake.message_requests[-1].response["content"][0]
    assert returned["type"] == "compaction"
    block = response.content[0]
    assert isinstance(block, TextBlock) and block.text == returned["content"]
    assert block.model_extra is not None and block.model_extra[PROVIDER_BLOCK_KEY] == returned
    assert response.context is not None and response.context.compacted and response.context.compaction_readable
    assert response.context.compaction_input_tokens is not None
    assert response.usage.total_input < fake_token_count(fake.message_requests[-1].body)

    # the next request carries the block exactly as it came; the API reads the context from it
    follow = [*messages, Message(role="assistant", content=[*response.content, TextBlock(text="Done reading.")]),
              Message.user_text(render_state_block(STATE))]
    answer = claude.complete(request(follow, compacting))
    sent = fake.message_requests[-1]
    assert sent.status == 200, sent.response
    assistant = [m for m in sent.body["messages"] if m["role"] == "assistant"][-1]
    assert assistant["content"][0] == returned, "sent back verbatim, no longrun key, no cache_control"
    assert answer.usage.total_input < fake_token_count({**sent.body, "messages": sent.body["messages"][:-2]})
    assert answer.context is None or not answer.context.compacted
    # the provider read less than longrun sent: calibration does not learn from it
    assert calibration_after(Calibration(), 5_000, request(follow, compacting), answer) is None


# -- OpenAI Responses ---------------------------------------------------------------------------


@pytest.fixture
def openai_fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key=OPENAI_KEY) as f:
        yield f


def test_openai_provider_mode_sends_compact_threshold_and_keeps_the_item(openai_fake: FakeOpenAI) -> None:
    gpt = get_provider("openai:gpt-5-mini", openai_api_key=OPENAI_KEY, openai_base_url=openai_fake.url)
    try:
        messages = conversation(6)
        gpt.complete(request(messages, None, model="openai:gpt-5-mini"))
        assert "context_management" not in openai_fake.responses_requests[-1].body

        response = gpt.complete(request(messages, ctx(trigger=1_500), model="openai:gpt-5-mini"))
        sent = openai_fake.responses_requests[-1]
        assert sent.body["context_management"] == [{"type": "compaction", "compact_threshold": 1_500}]
        item = sent.response["output"][0]
        assert item["type"] == "compaction"
        [kept] = [b for b in response.content if (b.model_extra or {}).get(ITEM_KEY, {}).get("type") == "compaction"]
        assert kept.model_extra is not None and kept.model_extra[ITEM_KEY] == item
        assert response.context is not None and response.context.compacted and not response.context.compaction_readable

        # longrun's summary goes beside the opaque item; the report onto the first block
        content, tokens = record(list(response.content), response.context, "## Progress\n- read p0.py")
        assert tokens and isinstance(content[0], TextBlock) and "longrun_provider_context" in (content[0].model_extra or {})
        beside = next(b for b in content if (b.model_extra or {}).get(ITEM_KEY, {}).get("type") == "compaction")
        assert isinstance(beside, TextBlock) and "read p0.py" in beside.text

        # sent back verbatim (the summary text is not): the server reads the context from the item
        follow = [*messages, Message(role="assistant", content=content), Message.user_text(render_state_block(STATE))]
        again = gpt.complete(request(follow, ctx(trigger=1_500), model="openai:gpt-5-mini"))
        sent = openai_fake.responses_requests[-1]
        assert sent.status == 200, sent.response
        assert item in sent.body["input"] and "read p0.py" not in str(sent.body["input"])
        assert again.usage.total_input < response.usage.total_input
    finally:
        gpt.close()


def test_longrun_start_takes_the_context_mode(tmp_path: Any) -> None:
    from longrun.cli import build_parser
    from longrun.cli.commands.common import CliError
    from longrun.cli.commands.start import build_spec

    argv = ["start", "--objective", "o", "--workspace", str(tmp_path), "--approver", "alice",
            "--model", "anthropic:claude-sonnet-4-6"]
    assert build_spec(build_parser().parse_args(argv)).context.mode == "client"
    spec = build_spec(build_parser().parse_args([*argv, "--context-mode", "hybrid", "--provider-compaction"]))
    assert (spec.context.mode, spec.context.provider_compaction) == ("hybrid", True)
    with pytest.raises(CliError, match="--provider-compaction needs --context-mode provider or hybrid"):
        build_spec(build_parser().parse_args([*argv, "--provider-compaction"]))
    with pytest.raises(SystemExit):
        build_parser().parse_args([*argv, "--context-mode", "server"])


def test_provider_mode_is_client_mode_where_the_api_manages_no_context() -> None:
    from longrun.activities.provider_context import effective_policy, with_provider_context

    policy = ContextPolicy(mode="provider", trigger=10_000)
    for model, managed in (("anthropic:claude-sonnet-4-6", True), ("bedrock:us.anthropic.claude-sonnet-4-5", True),
                           ("openai:gpt-5-mini", True), ("openai-compatible:qwen3", False), ("scripted", False)):
        effective = effective_policy(policy, model)
        fired = should_compact(12_000, policy=effective, window=200_000, last_compaction_turn=None, turn=5)
        assert fired == (None if managed else "threshold"), model
        sent = with_provider_context(request(conversation(1), None, model=model), policy, model, 200_000)
        assert (sent.context is not None) == managed, model


def test_claude_on_bedrock_inherits_the_context_management(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.test_provider_cloud import BEDROCK, FakeCloud

    with FakeCloud() as cloud:
        for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFAKEFAKEFAKEFAKE")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake/secret/key/for/tests/only/000000000")
        monkeypatch.setenv("AWS_REGION", "us-east-1")
        monkeypatch.setenv("ANTHROPIC_BEDROCK_BASE_URL", cloud.url)
        provider = get_provider(BEDROCK)
        try:
            response = provider.complete(request(conversation(6), ctx(), model=BEDROCK))
        finally:
            provider.close()
        sent = cloud.requests[-1]
        assert sent.status == 200 and sent.path.endswith("/invoke"), sent.response
        assert CONTEXT_BETA in sent.body["anthropic_beta"], "Bedrock takes the beta in the body"
        assert sent.body["context_management"]["edits"][0]["keep"] == {"type": "tool_uses", "value": 2}
        assert response.context is not None and response.context.cleared_tool_uses == 4
