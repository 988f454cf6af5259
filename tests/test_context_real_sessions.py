"""The estimator, calibration and `longrun compact` on the five real sessions (and a fake tokenizer).

Figures are printed (run with `-s`); assertions are loose sanity bounds, the targets live in the
benchmarks (issue 7)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from longrun.cli import compact_cmd
from longrun.cli.parsers import compact as compact_parser
from longrun.context import Calibration, estimate_message, estimate_request
from longrun.models import Message
from tests.fake_anthropic import fake_token_count, validate_tool_pairing

SESSIONS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "real-sessions"
needs_sessions = pytest.mark.skipif(not SESSIONS.is_dir(), reason=f"real sessions not found at {SESSIONS} (shared/ beside the repo)")


def sessions() -> list[Path]:
    return sorted(p for p in SESSIONS.iterdir() if p.is_dir()) if SESSIONS.is_dir() else []


def load(d: Path) -> tuple[list[dict[str, Any]], list[dict[str, int]], dict[str, Any]]:
    msgs = [json.loads(line) for line in (d / "messages.jsonl").read_text().splitlines() if line.strip()]
    reqs = [json.loads(line) for line in (d / "requests.jsonl").read_text().splitlines() if line.strip()]
    return msgs, reqs, json.loads((d / "compaction.json").read_text())


# --- calibration against a different tokenizer -----------------------------------------------------

def test_calibration_reaches_3_percent_of_the_fake_tokenizer() -> None:
    """Requests grow turn by turn; after a few reported counts the calibrated estimate of the next
    request is within 3% of what the fake server (its own tokenizer) counts."""
    from longrun.models import ModelRequest

    cal = Calibration()
    messages: list[Message] = []
    errors = []
    for turn in range(8):
        messages.append(Message.user_text(f"Turn {turn}: please read module_{turn}.py and explain parse() carefully."))
        messages.append(Message(role="assistant", content=[{"type": "text", "text": (  # type: ignore[list-item]
            f"def parse_{turn}(value):\n    return {{'key': value, 'n': {turn}}}\n" * 40)}]))
        messages.append(Message.user_text("Now the log:\n" + f"2026-01-0{turn % 9 + 1} INFO worker started pid={turn}\n" * 30))
        req = ModelRequest(model="m", system="You review code.", messages=list(messages))
        est = estimate_request(req)
        actual = fake_token_count(req.model_dump(mode="json", exclude_none=True))
        errors.append(abs(cal.apply(est) - actual) / actual)
        cal = cal.update(est, actual)
    print(f"\ncalibrated error per request vs fake tokenizer: {[f'{e:.1%}' for e in errors]}; ratio {cal.ratio:.3f}")
    assert errors[0] > 0.03, "the fake tokenizer should differ from the estimator, or this test proves nothing"
    assert all(e <= 0.03 for e in errors[3:])


def test_calibration_ignores_bogus_reports() -> None:
    cal = Calibration().update(1000, 1200).update(0, 5).update(1000, 0)
    assert cal.samples == 1 and cal.ratio == pytest.approx(1.2)
    assert Calibration().update(1000, 10**9).ratio == 4.0


# --- real sessions: the estimator on request-to-request deltas ----------------------------------------

@needs_sessions
def test_estimator_error_on_real_deltas() -> None:
    """Per session: error of the estimated request-to-request deltas against the provider's, with
    no calibration and with calibration learned from earlier deltas of the same run. Zero deltas
    (requests whose usage was not refreshed in the source logs) are merged into the next one."""
    print("\nsession   deltas  raw sum err  calibrated sum err  raw median  calibrated median")
    for d in sessions():
        msgs, reqs, _ = load(d)
        ests = [estimate_message(m) for m in msgs]
        cal = Calibration()
        raw_sum = cal_sum = actual_sum = 0
        raw_errs, cal_errs = [], []
        prev = reqs[0]
        for r in reqs[1:]:
            actual = r["input_total"] - prev["input_total"]
            if actual <= 0:
                continue
            est = sum(ests[prev["before"]: r["before"]])
            if cal.samples >= 3:  # score the calibrated estimator once it has learned something
                raw_sum += est
                cal_sum += cal.apply(est)
                actual_sum += actual
                raw_errs.append(abs(est - actual) / actual)
                cal_errs.append(abs(cal.apply(est) - actual) / actual)
            cal = cal.update(est, actual)
            prev = r
        raw_err = abs(raw_sum - actual_sum) / actual_sum
        cal_err = abs(cal_sum - actual_sum) / actual_sum
        print(f"{d.name[:8]}  {len(raw_errs):6d}  {raw_err:11.1%}  {cal_err:18.1%}  "
              f"{sorted(raw_errs)[len(raw_errs) // 2]:10.1%}  {sorted(cal_errs)[len(cal_errs) // 2]:17.1%}")
        assert raw_err < 0.30 and cal_err < 0.20


# --- real sessions: `longrun compact` at 25% of the client's pre_tokens ---------------------------------

def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="longrun")
    compact_parser.register(parser.add_subparsers())
    args = parser.parse_args(["compact", *argv])
    code = compact_cmd.run(args)
    out = capsys.readouterr()
    return code, out.out, out.err


@needs_sessions
@pytest.mark.parametrize("session", [p.name for p in sessions()] or ["none"])
def test_longrun_compact_on_real_session(session: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    d = SESSIONS / session
    msgs, _, comp = load(d)
    budget = comp["pre_tokens"] // 4
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"objective": "finish the bead", "constraints": ["Never push to master."]}))
    code, out, err = _cli([str(d / "messages.jsonl"), "--budget", str(budget), "--state", str(state), "--json"], capsys)
    assert code == 0, err
    result = json.loads(out)
    sent, report = result["messages"], result["report"]
    assert estimate_request(_as_request(sent)) <= budget
    assert validate_tool_pairing(sent) is None
    # every tool_use sent has its tool_result, and every tool_use of the session is either sent or
    # named in the summary by its file path / command
    sent_text = json.dumps(sent, ensure_ascii=False)
    # every text the human wrote is present verbatim (in the tail or the summary's verbatim section)
    for m in msgs:
        if m["role"] != "user":
            continue
        content = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        for b in content:
            if b["type"] == "text":
                assert json.dumps(b["text"], ensure_ascii=False)[1:-1] in sent_text, b["text"][:80]
    assert "Never push to master." in sent[-1]["content"][-1]["text"]
    print(f"\n{session[:8]} budget {budget}: {report['tokens_before_estimated']} -> {report['tokens_sent_estimated']} tokens, "
          f"stages {report['stages_run']}, freed {report['freed_per_stage']}, cleared {report['cleared_results']}, "
          f"summarized {report['messages_summarized']} msgs into {report['summary_tokens']} tokens, "
          f"tail {report['tail_messages']} msgs / {report['tail_tokens']} tokens, {report['duration_ms']:.1f} ms")


def _as_request(wire: list[dict[str, Any]]) -> Any:
    from longrun.models import ModelRequest

    return ModelRequest(model="m", system="", messages=[Message.from_wire(m) for m in wire])


# The CPU cost of the stages per 100k tokens is a benchmark's, not a test's (issue 26: no timing
# assertions in tests): `python -m bench.run --only synthetic` times the stages call by call, and
# `--only extraction` times fact extraction on these sessions.
