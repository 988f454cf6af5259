"""`bedrock:` and `vertex:` through the Anthropic SDK's AnthropicBedrock / AnthropicVertex clients,
over real HTTP, against the fake Messages server answering on the clouds' paths. No cloud
credentials exist here: dummy ones, set in this test's environment only. What is checked is what
longrun controls: the request the SDK sends (path, body, signing), the parsed answer, and the
mapping of failures (rate limits, server errors, the clouds' overflow wording)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from typing import Any

import pytest

from longrun.errors import ConfigError, ContextOverflow, FatalProviderError, RetryableProviderError
from longrun.models import Message, ModelRequest, TextBlock, ToolSpec
from longrun.providers import get_provider, model_info
from longrun.providers.cloud import CloudClaudeProvider, cloud_provider
from tests.fake_anthropic import FakeAnthropic, RecordedRequest

BEDROCK = "bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0"
VERTEX = "vertex:claude-sonnet-4-5@20250929"
TOOL = ToolSpec(name="read_file", description="Read a file.", input_schema={"type": "object", "properties": {}})
_CLOUD_PATH = re.compile(r"/model/[^/]+/invoke|/v1/projects/[^/]+/locations/[^/]+/publishers/anthropic/models/[^/]+:rawPredict")


class FakeCloud(FakeAnthropic):
    """The fake Messages API, also on Bedrock's and Vertex's paths (the body is the same API's)."""

    def handle(self, rec: RecordedRequest) -> tuple[int, dict[str, Any], dict[str, str]]:
        if _CLOUD_PATH.fullmatch(rec.path):
            return super().handle(dataclasses.replace(rec, path="/v1/messages"))
        return super().handle(rec)


@pytest.fixture
def fake() -> Iterator[FakeCloud]:
    with FakeCloud() as f:
        yield f


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, fake: FakeCloud) -> None:
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFAKEFAKEFAKEFAKE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake/secret/key/for/tests/only/000000000")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("ANTHROPIC_BEDROCK_BASE_URL", fake.url)


def _request() -> ModelRequest:
    return ModelRequest(model=BEDROCK, system="You review code.", tools=[TOOL], max_tokens=512,
                        messages=[Message(role="user", content=[TextBlock(text="Start."), TextBlock(text="<task_state/>")])])


def test_bedrock_request_is_signed_and_shaped_for_invoke(fake: FakeCloud, aws_env: None) -> None:
    provider = get_provider(BEDROCK)
    assert isinstance(provider, CloudClaudeProvider) and provider.info == model_info(BEDROCK)
    assert provider.info.window == 200_000 and provider.info.max_output == 64_000
    fake.enqueue_tool_use("read_file", {}, id="toolu_b1", text="Looking.")
    response = provider.complete(_request())
    assert response.stop_reason == "tool_use" and response.content[1].id == "toolu_b1"
    rec = fake.requests[-1]
    assert rec.path == "/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/invoke"
    assert rec.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIAFAKEFAKEFAKEFAKE/")
    assert "/us-east-1/bedrock/aws4_request" in rec.headers["authorization"]
    body = rec.body
    assert body["anthropic_version"] and "model" not in body, "the SDK moved the model into the path"
    assert body["max_tokens"] == 512 and body["tools"][0]["name"] == "read_file"
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}, "the stable prefix is marked for caching"
    assert body["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in body["messages"][0]["content"][-1], "the state block is never cached"
    assert response.usage.total_input > 0


def test_vertex_request_goes_to_raw_predict_with_the_token(fake: FakeCloud) -> None:
    provider = cloud_provider(VERTEX, region="us-east5", project_id="proj-1", access_token="ya29.fake-token",
                              base_url=f"{fake.url}/v1")
    assert provider.info.window == 200_000
    fake.enqueue_text("done")
    assert provider.complete(_request()).content[0].text == "done"
    rec = fake.requests[-1]
    assert rec.path == "/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict"
    assert rec.headers["authorization"] == "Bearer ya29.fake-token"
    assert rec.body["anthropic_version"] and "model" not in rec.body


def test_cloud_errors_map_like_the_apis(fake: FakeCloud, aws_env: None) -> None:
    provider = get_provider(BEDROCK)
    fake.fail_next(429, retry_after=4)
    with pytest.raises(RetryableProviderError) as info:
        provider.complete(_request())
    assert info.value.status == 429 and info.value.retry_after == 4.0
    assert len(fake.requests) == 1, "max_retries=0"
    fake.fail_next(503)
    with pytest.raises(RetryableProviderError):
        provider.complete(_request())
    fake.enqueue_error(400, "Input is too long for requested model.")
    with pytest.raises(ContextOverflow, match="too long"):
        provider.complete(_request())
    fake.enqueue_error(400, "prompt is too long: 210000 tokens > 200000 maximum")
    with pytest.raises(ContextOverflow, match="210000 tokens > 200000"):
        provider.complete(_request())
    fake.fail_next(403, message="You don't have access to the model with the specified model ID.")
    with pytest.raises(FatalProviderError) as fatal:
        provider.complete(_request())
    assert fatal.value.status == 403 and "access to the model" in str(fatal.value)


def test_an_unknown_kind_or_missing_region_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="unknown model"):
        get_provider("azure:gpt")
    for name in ("CLOUD_ML_REGION", "ANTHROPIC_VERTEX_PROJECT_ID", "GOOGLE_CLOUD_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigError, match="vertex:claude"):
        get_provider(VERTEX)
