"""`--log-format json` (longrun.telemetry.logs): the worker's log lines are JSON objects that name
the run, the turn, the activity and the trace; a secret in a message or an exception is redacted;
text stays the default."""

from __future__ import annotations

import io
import json
import logging
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from longrun.cli import build_parser
from longrun.client.connection import connect_temporal
from longrun.models.spec import RunSpec
from longrun.telemetry import configure_tracing
from longrun.telemetry.logs import JsonFormatter
from tests.support.harness import Harness
from tests.support.otlp_receiver import OtlpReceiver

REPO = Path(__file__).resolve().parents[1]
CANARY = "sk-ant-api03-" + "Wm2" * 20 + "AA"


def test_a_line_is_one_json_object_and_never_carries_a_secret() -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter())
    log = logging.getLogger("longrun.test_json_logs")
    log.addHandler(handler)
    log.propagate = False
    try:
        log.warning("calling with %s", f"key={CANARY}")
        try:
            raise RuntimeError(f"the provider refused {CANARY}")
        except RuntimeError:
            log.exception("model call failed")
    finally:
        log.removeHandler(handler)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(x["level"], x["logger"]) for x in lines] == [("warning", "longrun.test_json_logs"),
                                                         ("error", "longrun.test_json_logs")]
    assert CANARY not in out.getvalue() and "[REDACTED:" in lines[0]["message"]
    assert "RuntimeError" in lines[1]["error"] and "[REDACTED:anthropic_key]" in lines[1]["error"]


def test_text_stays_the_default_and_json_is_asked_for() -> None:
    parser = build_parser()
    assert parser.parse_args(["worker"]).log_format == "text"
    assert parser.parse_args(["serve", "--log-format", "json"]).log_format == "json"
    with pytest.raises(SystemExit):
        parser.parse_args(["worker", "--log-format", "xml"])


@pytest.mark.slow
@pytest.mark.timeout(180)
async def test_the_workers_json_lines_name_run_turn_activity_and_trace(store, db_url, temporal_env, tmp_path) -> None:
    """A real `longrun worker --log-format json` runs a scripted run; its stderr is read back."""
    memory, receiver = InMemorySpanExporter(), OtlpReceiver()
    tracing = configure_tracing(exporter=memory)
    assert tracing is not None
    address = temporal_env.client.service_client.config.target_host
    task_queue = f"logs-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "LONGRUN_DATABASE_URL": db_url, "TEMPORAL_ADDRESS": address, "LONGRUN_TASK_QUEUE": task_queue,
           "LONGRUN_HOME": str(tmp_path / "home"), "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
           "OTEL_BSP_SCHEDULE_DELAY": "50"}
    env.pop("LONGRUN_MODEL", None)
    log_path = tmp_path / "worker.err"
    with open(log_path, "w") as err:
        worker = subprocess.Popen([sys.executable, "-m", "longrun.cli", "worker", "--log-format", "json"],
                                  cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=err)
    try:
        client = await connect_temporal(address, "default")
        ws = tmp_path / "ws"
        ws.mkdir()
        (ws / "notes.txt").write_text("nothing to see\n")
        h = Harness(client, store, task_queue)
        run_id = await h.start(RunSpec(objective=f"summarize the notes; deploy key {CANARY}", workspace=str(ws)))
        await h.result(run_id, timeout=120)
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(30)
        receiver.close()
        tracing.shutdown()
    text = log_path.read_text()
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    assert lines, "the worker wrote log lines"
    assert CANARY not in text
    about = [x for x in lines if x.get("run_id") == run_id]
    answered = [x for x in about if x["message"].startswith("model answered")]
    assert answered, f"a line per model call, naming the run: {lines[:5]}"
    first = answered[0]
    assert first["turn"] == 1 and first["activity"] == "longrun.turn" and first["level"] == "info"
    [start] = [s for s in memory.get_finished_spans() if s.name == "StartWorkflow:longrun.AgentRun"]
    assert start.context is not None
    assert first["trace_id"] == format(start.context.trace_id, "032x"), "the line names the run's trace"
