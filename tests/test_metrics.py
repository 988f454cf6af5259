"""Prometheus metrics on the real stack, as an operator scrapes them (longrun/telemetry/): a
`longrun worker --metrics-port` subprocess on its own task queue runs a scripted run that waits for
an approval, `longrun serve` answers `/metrics` without a session, and each scrape is checked
against the run's audit (`longrun audit --json`): the worker's counters equal the audit's events,
the console's gauges show the pending approval and its age, and no label carries a run id."""

from __future__ import annotations

import socket
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from longrun.service.devstack import free_port
from tests.support.cli_stack import LONGRUN, Cli
from tests.support.console_server import serve

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(url: str) -> tuple[str, Samples]:
    """The endpoint's text and its samples, keyed by (name, sorted labels)."""
    text = httpx.get(url, timeout=30).raise_for_status().text
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return text, samples


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum of `name`'s samples whose labels include `labels`."""
    return sum(v for (n, ls), v in samples.items() if n == name and labels.items() <= dict(ls).items())


def audit_events(cli: Cli, run_id: str) -> list[dict[str, Any]]:
    return [r["data"]["event"] for r in cli.json("audit", run_id)["timeline"] if r["source"] == "audit"]


def wait_for(what: str, check: Any, timeout: float = 120.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)


@pytest.fixture(scope="module")
def metrics_worker(cli: Cli) -> Iterator[tuple[str, int]]:
    """`longrun worker --metrics-port PORT` on a task queue of its own (the module's stack also has
    a plain worker on the default queue): (task queue, port)."""
    queue, port = f"tq-metrics-{uuid.uuid4().hex[:8]}", free_port()
    while True:  # the SDK's metrics take the next port: it must be free too
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", port + 1))
            break
        except OSError:
            port = free_port()
    log = open(cli.home / "metrics-worker.log", "wb")
    proc = subprocess.Popen([LONGRUN, "worker", "--task-queue", queue, "--metrics-port", str(port)], env=cli.env,
                            stdout=log, stderr=subprocess.STDOUT)

    def answers() -> bool:
        assert proc.poll() is None, (cli.home / "metrics-worker.log").read_text()
        try:
            return all(httpx.get(f"http://127.0.0.1:{p}/metrics", timeout=2).status_code == 200 for p in (port, port + 1))
        except httpx.HTTPError:
            return False

    try:
        wait_for("the worker's metrics endpoints", answers)
        yield queue, port
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()


def check_against_audit(samples: Samples, events: list[dict[str, Any]]) -> None:
    """The worker's counters equal what the audit says happened (this worker served only this run)."""
    kinds = Counter(e["kind"] for e in events)
    called = [e for e in events if e["kind"] == "model_called"]
    assert called, "the run made no model call"
    assert total(samples, "longrun_turns_total") == len(called)
    assert total(samples, "longrun_model_requests_total", outcome="ok") == len(called)
    assert total(samples, "longrun_tool_calls_total") == kinds["tool_ran"]
    assert total(samples, "longrun_tool_calls_total", outcome="error") == sum(
        1 for e in events if e["kind"] == "tool_ran" and e["is_error"])
    verdicts = Counter((e["rule"], e["verdict"]) for e in events if e["kind"] == "gate_verdict")
    assert verdicts, "the gate audited no verdict"
    for (rule, verdict), n in verdicts.items():
        assert total(samples, "longrun_gate_verdicts_total", rule=rule, verdict=verdict) == n, (rule, verdict)
    assert total(samples, "longrun_gate_verdicts_total") == sum(verdicts.values())
    intents = sum(1 for e in events if e["kind"] == "effect_intent" and e["attempt"] == 1)
    assert total(samples, "longrun_effects_total", status="unknown") == intents
    for status in ("confirmed", "none"):
        settled = sum(1 for e in events if e["kind"] == "effect_settled" and e["status"] == status)
        assert total(samples, "longrun_effects_total", status=status) == settled, status
    for kind, field in (("input", "input_tokens"), ("output", "output_tokens"),
                        ("cache_write", "cache_creation_input_tokens"), ("cache_read", "cache_read_input_tokens")):
        assert total(samples, "longrun_model_tokens_total", kind=kind) == sum(e["usage"][field] for e in called), kind
    assert total(samples, "longrun_model_cost_dollars_total", model="scripted") == 0  # the stand-in costs nothing
    assert total(samples, "longrun_model_unpriced_requests_total") == 0
    assert total(samples, "longrun_activity_duration_seconds_count", activity="longrun.turn", outcome="ok") >= len(called)


def test_the_metrics_of_a_run_match_its_audit_and_show_the_pending_approval(
        cli: Cli, workspace: Path, metrics_worker: tuple[str, int]) -> None:
    queue, port = metrics_worker
    with serve(cli) as console:
        anonymous = console.client()  # an operator's scraper: no session, no cookie
        # the gauges count the whole deployment: the process's stack may hold runs that other test
        # files left waiting, so this run must move them by one from where they stood
        _, before = scrape(console.url + "/metrics")
        pending_before = total(before, "longrun_approvals_pending")
        waiting_before = total(before, "longrun_runs", status="waiting_approval")
        run_id, status = cli.start_and_wait(workspace, "--task-queue", queue)
        approval_id = status["pending_approval"]["approval_id"]

        def pending_shown() -> Samples | None:
            r = anonymous.get("/metrics")
            assert r.status_code == 200, r.text
            _, samples = scrape(console.url + "/metrics")
            return samples if total(samples, "longrun_approvals_pending") == pending_before + 1 else None

        waiting = wait_for("the console's metrics to show the pending approval", pending_shown)
        assert total(waiting, "longrun_overview_up") == 1
        assert total(waiting, "longrun_runs", status="waiting_approval") == waiting_before + 1
        assert total(waiting, "longrun_approval_oldest_pending_seconds") > 0

        # mid-run: the run waits for a human, so the audit holds still while it is read
        text, during = scrape(f"http://127.0.0.1:{port}/metrics")
        check_against_audit(during, audit_events(cli, run_id))
        assert total(during, "longrun_gate_verdicts_total", verdict="needs_approval") >= 1

        assert cli("approve", run_id, "--as", "alice").returncode == 0
        assert cli("watch", run_id, "--interval", "0.2", timeout=180).returncode == 0
        assert cli.json("status", run_id)["status"] == "completed"

        text, after = scrape(f"http://127.0.0.1:{port}/metrics")
        events = audit_events(cli, run_id)
        check_against_audit(after, events)
        assert total(after, "longrun_effects_total", status="confirmed") >= 1, "the approved effect settled"
        assert total(after, "longrun_turns_total") > total(during, "longrun_turns_total")

        def answered() -> Samples | None:
            _, samples = scrape(console.url + "/metrics")
            return samples if total(samples, "longrun_approvals_pending") == pending_before else None

        done = wait_for("the console's metrics to drop the answered approval", answered)
        assert total(done, "longrun_runs", status="completed") >= 1
        if pending_before == 0:  # nothing else waits: no oldest pending approval either
            assert total(done, "longrun_approval_oldest_pending_seconds") == 0
        console_text = anonymous.get("/metrics").text

        sdk_text, sdk = scrape(f"http://127.0.0.1:{port + 1}/metrics")
        assert any(name.startswith("temporal_") for name, _ in sdk), "the Temporal SDK's metrics are served beside ours"

        for shown in (text, console_text, sdk_text):  # counts only: no run, approval or action in any label
            assert run_id not in shown and approval_id not in shown


def test_a_taken_metrics_port_stops_the_worker_with_what_to_do(cli: Cli, metrics_worker: tuple[str, int]) -> None:
    _, port = metrics_worker
    done = subprocess.run([LONGRUN, "worker", "--metrics-port", str(port)], env=cli.env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode != 0
    assert f"cannot serve metrics on 127.0.0.1:{port}" in done.stderr
    assert "choose a free port with --metrics-port" in done.stderr


def test_a_worker_labels_at_most_max_models_models_and_counts_the_rest_as_other() -> None:
    """The model label is the one a run's spec chooses: whoever may start runs must not be able to
    grow a worker's series without bound."""
    from longrun.models.audit import ModelCalled
    from longrun.models.provider import Usage
    from longrun.telemetry.metrics import MAX_MODELS, WorkerMetrics

    metrics = WorkerMetrics(process=False)
    names = [f"openai-compatible:model-{i}" for i in range(MAX_MODELS + 5)]
    metrics.observe([ModelCalled(turn=1, model=m, transcript_seq=2, usage=Usage(input_tokens=10, output_tokens=1),
                                 estimated_tokens=10, calibrated_tokens=10, stop_reason="end_turn") for m in names])
    labelled = {s.labels["model"] for f in metrics.registry.collect() for s in f.samples if "model" in s.labels}
    assert len(labelled) == MAX_MODELS + 1 and "other" in labelled
    unpriced = {s.labels["model"]: s.value for f in metrics.registry.collect() for s in f.samples
                if s.name == "longrun_model_unpriced_requests_total"}
    assert unpriced["other"] == 5 and sum(unpriced.values()) == len(names)  # no price: never counted as free
