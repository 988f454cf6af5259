"""Tracing (longrun.telemetry): off unless the `OTEL_*` environment says where to send spans; the
GenAI attribute names are the conventions'; every span is redacted before an exporter sees it,
Temporal's too; content only with the opt-in; OTLP/HTTP reaches a receiver that decodes the
protobuf; an approval's span names who decided and how long the request waited.

The kill -9 test of one trace is tests/test_telemetry_trace_crash.py."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import longrun.telemetry
from longrun.client import decide
from longrun.client.connection import connect_temporal
from longrun.errors import ConfigError
from longrun.models.blocks import Message, TextBlock, ToolUseBlock
from longrun.models.spec import RunSpec
from longrun.redact import Redactor
from longrun.telemetry import Tracing, configure_tracing, spans, tracing_config
from longrun.telemetry.tracing import current
from tests.support.harness import running_worker
from tests.support.otlp_receiver import OtlpReceiver
from tests.support.policy import GREETING_EDIT_PLAN, PlanProvider, greeting_workspace

REPO = Path(__file__).resolve().parents[1]
CANARY = "sk-ant-api03-" + "Kp4" * 20 + "AA"


@pytest.fixture
def traced() -> Iterator[tuple[Tracing, InMemorySpanExporter]]:
    memory = InMemorySpanExporter()
    tracing = configure_tracing(exporter=memory, content=False)
    assert tracing is not None
    try:
        yield tracing, memory
    finally:
        tracing.shutdown()


def test_the_public_names_are_pinned() -> None:
    assert sorted(longrun.telemetry.__all__) == [
        "CONTENT_VARIABLE", "LogFormat", "Tracing", "TracingConfig", "configure_logging", "configure_tracing",
        "flush_tracing", "tracing_config", "tracing_interceptors"]


def test_off_unless_the_environment_names_an_exporter() -> None:
    assert tracing_config({}) is None
    assert tracing_config({"OTEL_SERVICE_NAME": "x", "OTEL_EXPORTER_OTLP_HEADERS": "a=b"}) is None
    assert tracing_config({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}) is None
    assert tracing_config({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}) is None
    on = tracing_config({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"})
    assert on is not None and (on.exporter, on.protocol, on.content) == ("otlp", "http/protobuf", False)
    grpc = tracing_config({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
                           "LONGRUN_OTEL_CONTENT": "1"})
    assert grpc is not None and (grpc.protocol, grpc.content) == ("grpc", True)
    console = tracing_config({"OTEL_TRACES_EXPORTER": "console"})
    assert console is not None and console.exporter == "console"
    with pytest.raises(ConfigError, match="'http/protobuf'.*'grpc'"):
        tracing_config({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"})
    with pytest.raises(ConfigError, match="'otlp', 'console' or 'none'"):
        tracing_config({"OTEL_TRACES_EXPORTER": "zipkin"})


def test_off_spans_are_nothing() -> None:
    assert current() is None
    with spans.model_span("run-1", 1, "scripted") as span:
        assert span is None
    with spans.tool_span("run-1", 1, "c1", "read_file") as span:
        assert span is None


def test_the_attribute_names_are_the_genai_conventions() -> None:
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as g

    assert (spans.OPERATION, spans.PROVIDER, spans.REQUEST_MODEL, spans.REQUEST_MAX_TOKENS) == (
        g.GEN_AI_OPERATION_NAME, g.GEN_AI_PROVIDER_NAME, g.GEN_AI_REQUEST_MODEL, g.GEN_AI_REQUEST_MAX_TOKENS)
    assert (spans.RESPONSE_MODEL, spans.FINISH_REASONS, spans.CONVERSATION_ID) == (
        g.GEN_AI_RESPONSE_MODEL, g.GEN_AI_RESPONSE_FINISH_REASONS, g.GEN_AI_CONVERSATION_ID)
    assert (spans.INPUT_TOKENS, spans.OUTPUT_TOKENS, spans.CACHE_CREATION_TOKENS, spans.CACHE_READ_TOKENS) == (
        g.GEN_AI_USAGE_INPUT_TOKENS, g.GEN_AI_USAGE_OUTPUT_TOKENS, g.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
        g.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS)
    assert (spans.INPUT_MESSAGES, spans.OUTPUT_MESSAGES, spans.TOOL_NAME, spans.TOOL_CALL_ID, spans.TOOL_TYPE,
            spans.TOOL_ARGUMENTS, spans.TOOL_RESULT) == (
        g.GEN_AI_INPUT_MESSAGES, g.GEN_AI_OUTPUT_MESSAGES, g.GEN_AI_TOOL_NAME, g.GEN_AI_TOOL_CALL_ID,
        g.GEN_AI_TOOL_TYPE, g.GEN_AI_TOOL_CALL_ARGUMENTS, g.GEN_AI_TOOL_CALL_RESULT)


def test_every_span_is_redacted_before_export_temporals_too(traced: tuple[Tracing, InMemorySpanExporter]) -> None:
    """Temporal's interceptor puts a failed activity's message in the span's status, and records
    the exception; neither may carry a secret out."""
    tracing, memory = traced
    with pytest.raises(RuntimeError):
        with tracing.tracer.start_as_current_span("RunActivity:x", attributes={"note": f"key {CANARY}"}):
            raise RuntimeError(f"provider said: bad key {CANARY}")
    with spans.tool_span("run-1", 2, "c1", f"tool {CANARY}") as span:
        spans.record_gate(span, kind="effect", verdict="deny", rule="gate", action_hash="a" * 64, action_id="run-1/t2/c0")
    exported = memory.get_finished_spans()
    assert len(exported) == 2
    texts = [exported[0].status.description or "", *[str(v) for s in exported for v in (s.attributes or {}).values()],
             *[str(v) for s in exported for e in s.events for v in (e.attributes or {}).values()], exported[1].name]
    assert [t for t in texts if CANARY in t] == []
    assert any("[REDACTED:anthropic_key]" in t for t in texts)
    assert exported[1].attributes["longrun.gate.verdict"] == "deny"


def test_text_attributes_are_redacted_and_the_ones_longrun_makes_pass_as_they_are(
        traced: tuple[Tracing, InMemorySpanExporter]) -> None:
    """A redactor that takes "plover" out shows which attributes are redacted when they are set:
    the tool's name and call id, which a model makes up, are; the gate's verdict, rule and the
    action hash, which longrun makes from a closed set or a hash, are not (and not clipped)."""
    _, memory = traced
    plover = Redactor(["plover"], include_defaults=False)
    stages = ["plover-stage-" + "x" * 300]
    with spans.tool_span("run-1", 2, "call-plover", "plover_tool", plover) as span:
        spans.record_gate(span, kind="effect", verdict="allow", rule="plover-rule", action_hash="plover" * 20,
                          action_id="run-1/t2/c0", redactor=plover)
    with spans.compaction_span("run-1", 3, "threshold") as span:
        spans.record_compaction(span, "applied", None)
        assert span is not None
        spans._set(span, {"longrun.compaction.stages": stages})
    tool, compaction = memory.get_finished_spans()
    attributes = dict(tool.attributes or {})
    assert tool.name == "execute_tool [REDACTED:custom]_tool"
    assert attributes["gen_ai.tool.name"] == "[REDACTED:custom]_tool"
    assert attributes["gen_ai.tool.call.id"] == "call-[REDACTED:custom]"
    assert (attributes["longrun.gate.rule"], attributes["longrun.action_hash"]) == ("plover-rule", "plover" * 20)
    assert attributes["longrun.gate.verdict"] == "allow" and attributes["longrun.action_id"] == "run-1/t2/c0"
    assert list((compaction.attributes or {})["longrun.compaction.stages"]) == stages, "not clipped to 256"


def test_the_exporter_passes_an_unchanged_span_as_it_is_and_copies_a_redacted_one() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from longrun.telemetry.export import memo_redact, redacted_span

    memory = InMemorySpanExporter()  # the spans as made, before any redaction
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    for note in ("plain words", f"key {CANARY}", "plain words"):
        with provider.get_tracer("t").start_as_current_span("RunActivity:x", attributes={"note": note, "n": 3}):
            pass
    plain, secret, again = memory.get_finished_spans()
    redact = memo_redact(Redactor())
    assert redacted_span(plain, redact) is plain and redacted_span(again, redact) is again
    copy = redacted_span(secret, redact)
    assert copy is not secret and dict(copy.attributes or {}) == {"note": "key [REDACTED:anthropic_key]", "n": 3}
    assert (copy.context, copy.parent, copy.start_time, copy.end_time) == (
        secret.context, secret.parent, secret.start_time, secret.end_time)


def test_a_worker_decodes_a_trace_header_once() -> None:
    """Every activity of a run carries the workflow's header (longrun.telemetry.interceptor); the
    worker remembers what it decoded, and a header of another trace is decoded on its own."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    from longrun.telemetry.interceptor import RunTracingInterceptor

    interceptor = RunTracingInterceptor(TracerProvider().get_tracer("t"))
    headers = []
    for _ in range(2):
        with interceptor.tracer.start_as_current_span("StartWorkflow:x"):
            headers.append(interceptor._context_to_headers({}))
    first = interceptor._context_from_headers(headers[0])
    assert first is not None and interceptor._context_from_headers(dict(headers[0])) is first
    other = interceptor._context_from_headers(headers[1])
    assert other is not None and other is not first
    ids = [trace.get_current_span(c).get_span_context().trace_id for c in (first, other)]
    assert ids[0] != ids[1]
    assert interceptor._context_from_headers({}) is None


def test_content_only_with_the_opt_in_and_redacted() -> None:
    messages = [Message(role="user", content=[TextBlock(text=f"deploy with {CANARY}, says the plover prompt")])]
    answer = Message(role="assistant", content=[ToolUseBlock(id="t1", name="run_command", input={"cmd": "ls"})])
    for opted in (False, True):
        memory = InMemorySpanExporter()
        tracing = configure_tracing(exporter=memory, content=opted)
        assert tracing is not None
        try:
            with spans.model_span("run-1", 1, "anthropic:claude-sonnet-4-6") as span:
                spans.record_content(span, messages, answer, "tool_use")
        finally:
            tracing.shutdown()
        [exported] = memory.get_finished_spans()
        attributes = dict(exported.attributes or {})
        assert attributes["gen_ai.provider.name"] == "anthropic"
        if not opted:
            assert "gen_ai.input.messages" not in attributes and "gen_ai.output.messages" not in attributes
            continue
        sent = str(attributes["gen_ai.input.messages"])
        assert "plover prompt" in sent and CANARY not in sent and "[REDACTED:anthropic_key]" in sent
        assert '"type": "tool_call"' in str(attributes["gen_ai.output.messages"])


def test_otlp_http_reaches_a_receiver_that_decodes_the_protobuf() -> None:
    """The standard environment alone turns it on, in a process of its own (as a worker is)."""
    receiver = OtlpReceiver()
    probe = ("from longrun.telemetry import configure_tracing, flush_tracing, spans\n"
             "assert configure_tracing() is not None\n"
             "with spans.compaction_span('run-otlp', 3, 'soft') as s:\n"
             "    spans.record_compaction(s, 'applied', None)\n"
             "flush_tracing()\n")
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_SERVICE_NAME": "probe",
           "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}
    try:
        subprocess.run([sys.executable, "-c", probe], cwd=REPO, env=env, check=True, timeout=60)
        [span] = receiver.received()
    finally:
        receiver.close()
    assert (span.service, span.name) == ("probe", "compact")
    assert span.attributes == {"longrun.run_id": "run-otlp", "longrun.turn": 3, "longrun.compaction.trigger": "soft",
                               "longrun.compaction.outcome": "applied"}
    assert len(span.trace_id) == 32 and span.parent_id == ""


@pytest.mark.slow
@pytest.mark.timeout(120)
async def test_an_approval_span_names_the_approver_and_the_wait(store, temporal_env, tmp_path) -> None:
    """With the content opt-in on, so the tool spans' arguments and result are exercised too."""
    memory = InMemorySpanExporter()
    tracing = configure_tracing(exporter=memory, content=True)
    assert tracing is not None
    try:
        client = await connect_temporal(temporal_env.client.service_client.config.target_host, "default")
        ws = greeting_workspace(tmp_path)
        async with running_worker(client, store, provider=PlanProvider(plan=GREETING_EDIT_PLAN)) as h:
            run_id = await h.start(RunSpec(objective="Fix the greeting.", workspace=str(ws), approvers=["alice"]))
            pending = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval")).pending_approval
            await decide.approve(h.client, run_id, pending.approval_id, "alice")
            result = await h.result(run_id)
    finally:
        tracing.shutdown()
    assert result.status == "completed"
    exported = memory.get_finished_spans()
    [approval] = [s for s in exported if s.name == "approval approve"]
    attributes = dict(approval.attributes or {})
    assert attributes["longrun.approval.approver"] == "alice"
    assert attributes["longrun.approval.id"] == pending.approval_id
    assert attributes["longrun.approval.wait_seconds"] > 0
    [start] = [s for s in exported if s.name == "StartWorkflow:longrun.AgentRun"]
    assert start.context is not None and approval.context is not None
    assert approval.context.trace_id == start.context.trace_id, "the approval's span is in the run's trace"
    gates = [s for s in exported if s.name == "execute_tool apply_patch"]
    assert {dict(s.attributes or {}).get("longrun.gate.verdict") for s in gates} >= {"needs_approval", "allow"}
    ran = [dict(s.attributes or {}) for s in gates if dict(s.attributes or {}).get("longrun.effect.status")]
    assert [a["longrun.effect.status"] for a in ran] == ["confirmed"]
    assert "hello.txt" in str(ran[0]["gen_ai.tool.call.arguments"]), "opted in: the arguments, redacted"
    assert ran[0]["gen_ai.tool.call.result"], "opted in: the tool's output"
