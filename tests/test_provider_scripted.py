"""The scripted agent drives a real review of samples/tiny through a minimal in-test executor.

The executor is deliberately small and honest: real file reads, real regex search, a real
`apply_patch` on a copy of the workspace, a real subprocess for the allowed test command, and the
four state tools applied to a `TaskState`. Approval is a callback standing in for the human.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from longrun.context.state_block import render_state_block
from longrun.context.tokens import estimate_messages, estimate_request
from longrun.models import Decision, Message, ModelRequest, NextAction, Step, TaskState, TextBlock, ToolResultBlock
from longrun.providers import ScriptedProvider, get_provider
from longrun.providers.scripted import Constraints, find_test_command, objective_terms

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
FIXED_NOW = datetime(2025, 1, 1, tzinfo=UTC)
TEST_ARGV = [sys.executable, "-m", "unittest", "discover", "-s", "tests", "-q"]
OBJECTIVE = "The moving averages reported by the stats helper look wrong. Find the defect and propose a fix."

Approver = Callable[[str, dict[str, Any]], str | None]
"""(tool, args) -> None to approve, or a rejection message."""


class MiniExecutor:
    """Just enough of longrun's tools to run the scripted agent for real."""

    def __init__(self, workspace: Path, state: TaskState, allowed: list[list[str]], approve: Approver) -> None:
        self.ws = workspace.resolve()
        self.state = state
        self.allowed = allowed
        self.approve = approve
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def _path(self, rel: str) -> Path:
        p = (self.ws / rel).resolve()
        if not p.is_relative_to(self.ws):
            raise ValueError(f"path {rel!r} is outside the workspace")
        return p

    def _set(self, **changes: Any) -> None:
        self.state = self.state.model_copy(update={"state_version": self.state.state_version + 1, **changes})

    def run(self, name: str, args: dict[str, Any]) -> tuple[str, bool]:
        self.calls.append((name, args))
        try:
            return getattr(self, f"t_{name}")(**args), False
        except Exception as exc:  # the model sees the error, as with the real tools
            return f"{type(exc).__name__}: {exc}", True

    def t_list_dir(self, path: str = ".") -> str:
        d = self._path(path)
        return "\n".join(
            p.name + ("/" if p.is_dir() else "") for p in sorted(d.iterdir()) if p.name != "__pycache__"
        )

    def t_read_file(self, path: str, offset: int = 1, limit: int = 2000) -> str:
        lines = self._path(path).read_text().splitlines()
        return "\n".join(f"{n:>6}\t{t}" for n, t in enumerate(lines, 1) if offset <= n < offset + limit)

    def t_grep(self, pattern: str, path: str = ".", glob: str | None = None) -> str:
        rx = re.compile(pattern)
        out = []
        for f in sorted(self._path(path).rglob("*")):
            if not f.is_file() or "__pycache__" in f.parts or (glob and not fnmatch.fnmatch(f.name, glob)):
                continue
            for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
                if rx.search(line):
                    out.append(f"{f.relative_to(self.ws).as_posix()}:{n}:{line}")
        return "\n".join(out)

    def t_apply_patch(self, path: str, old: str, new: str) -> str:
        refusal = self.approve("apply_patch", {"path": path, "old": old, "new": new})
        if refusal:
            raise PermissionError(refusal)
        p = self._path(path)
        text = p.read_text()
        if text.count(old) != 1:
            raise ValueError(f"`old` occurs {text.count(old)} times in {path}, expected exactly once")
        p.write_text(text.replace(old, new, 1))
        return f"patched {path}: 1 replacement"

    def t_run_command(self, argv: list[str]) -> str:
        if argv not in self.allowed:
            raise PermissionError(f"denied by gate: command {shlex.join(argv)} is not allowed")
        proc = subprocess.run(argv, cwd=self.ws, capture_output=True, text=True, timeout=60)
        return f"exit code: {proc.returncode}\n--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"

    def t_write_note(self, text: str) -> str:
        self._set(notes=[*self.state.notes, text])
        return "noted"

    def t_record_decision(self, summary: str, reason: str) -> str:
        self._set(decisions=[*self.state.decisions, Decision(summary=summary, reason=reason, at=FIXED_NOW)])
        return "decision recorded"

    def t_set_next_action(self, next_action: str) -> str:
        self._set(next_action=NextAction(next_action))
        return f"next_action = {next_action}"

    def t_complete_stage(self, summary: str) -> str:
        step = self.state.current_step.following()
        self._set(current_step=step)
        return f"current_step = {step.value}"


def drive(
    workspace: Path,
    *,
    constraints: list[str] | None = None,
    allowed: list[list[str]] | None = None,
    approve: Approver = lambda tool, args: None,
    max_turns: int = 40,
) -> tuple[list[Message], MiniExecutor, list[ModelRequest]]:
    state = TaskState(run_id="run-test", state_version=1, objective=OBJECTIVE, constraints=constraints or [],
                      updated_at=FIXED_NOW)
    ex = MiniExecutor(workspace, state, allowed or [], approve)
    provider = ScriptedProvider()
    transcript = [Message.user_text(f"Start the review. Objective: {OBJECTIVE}")]
    requests: list[ModelRequest] = []
    for _ in range(max_turns):
        last = transcript[-1]
        shown = Message(role="user", content=[*last.content, TextBlock(text=render_state_block(ex.state))])
        request = ModelRequest(model="scripted", system="You are a forensic code reviewer.",
                               messages=[*transcript[:-1], shown])
        requests.append(request)
        response = provider.complete(request)
        transcript.append(Message(role="assistant", content=response.content))
        if response.stop_reason == "end_turn":
            return transcript, ex, requests
        assert response.stop_reason == "tool_use"
        results = []
        for use in response.content:
            if use.type == "tool_use":
                text, err = ex.run(use.name, use.input)
                results.append(ToolResultBlock(tool_use_id=use.id, content=text, is_error=err))
        transcript.append(Message(role="user", content=results))
    raise AssertionError(f"the scripted agent did not stop within {max_turns} turns")


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    ws = tmp_path / "tiny"
    shutil.copytree(SAMPLES / "tiny", ws, ignore=shutil.ignore_patterns("__pycache__"))
    return ws


def _tests_pass(ws: Path) -> bool:
    return subprocess.run(TEST_ARGV, cwd=ws, capture_output=True, timeout=60).returncode == 0


def _tool_calls(transcript: list[Message]) -> list[tuple[str, dict[str, Any]]]:
    return [(u.name, u.input) for m in transcript if m.role == "assistant" for u in m.tool_uses()]


def test_finds_the_defect_and_proposes_the_edit(tiny: Path) -> None:
    assert not _tests_pass(tiny), "the sample's planted defect must make its tests fail"
    hint = f"tests: {shlex.join(TEST_ARGV)}"
    transcript, ex, _ = drive(tiny, constraints=[hint], allowed=[TEST_ARGV])

    patches = [args for name, args in _tool_calls(transcript) if name == "apply_patch"]
    assert patches == [
        {"path": "stats.py", "old": "        chunk = values[start:start + window - 1]",
         "new": "        chunk = values[start:start + window]"}
    ]
    assert _tests_pass(tiny), "the approved patch fixes the defect"
    # The finding is durable: in the state, with the rule that fired in the reason.
    assert any("stats.py line 17" in d.summary and "off-by-one-slice-end" in d.reason for d in ex.state.decisions)
    assert any(n.startswith("verify: ") and "exit code 0" in n for n in ex.state.notes)
    # It ran only the command it was told about, after the edit, under next_action=test.
    assert [args for name, args in _tool_calls(transcript) if name == "run_command"] == [{"argv": TEST_ARGV}]
    assert ex.state.current_step is Step.done and ex.state.next_action is NextAction.stop
    final = transcript[-1]
    assert final.tool_uses() == [] and "stats.py line 17" in final.text() and "deterministic offline" in final.text()
    # One or two tool calls per turn; ids deterministic and unique.
    ids = [u.id for m in transcript for u in m.tool_uses()]
    assert len(ids) == len(set(ids)) and all(re.fullmatch(r"toolu_s\d{4}_\d_[0-9a-f]{8}", i) for i in ids)
    assert all(len(m.tool_uses()) <= 2 for m in transcript)


def test_same_input_same_transcript(tmp_path: Path) -> None:
    runs = []
    for name in ("a", "b"):
        ws = tmp_path / name / "tiny"  # same relative layout, different absolute path
        shutil.copytree(SAMPLES / "tiny", ws, ignore=shutil.ignore_patterns("__pycache__"))
        transcript, _, _ = drive(ws, constraints=["tests: python3 -m unittest"], allowed=[])
        runs.append(json.dumps([m.to_wire() for m in transcript], sort_keys=True))
    assert runs[0] == runs[1]
    assert len(runs[0]) > 1000


def test_respects_a_do_not_modify_constraint(tiny: Path) -> None:
    before = (tiny / "stats.py").read_text()
    transcript, ex, _ = drive(tiny, constraints=["Do not modify stats.py: it is vendored."])
    assert "apply_patch" not in [name for name, _ in _tool_calls(transcript)]
    assert (tiny / "stats.py").read_text() == before
    assert any(n.startswith("edit skipped: stats.py") and "Do not modify stats.py" in n for n in ex.state.notes)
    # It still reports the finding.
    assert "stats.py line 17" in transcript[-1].text()


def test_rejected_edit_is_noted_and_the_review_moves_on(tiny: Path) -> None:
    refusals: list[str] = []

    def reject(tool: str, args: dict[str, Any]) -> str:
        refusals.append(tool)
        return "approval rejected by bob: not in this release"

    hint = f"tests: {shlex.join(TEST_ARGV)}"
    transcript, ex, _ = drive(tiny, constraints=[hint], allowed=[TEST_ARGV], approve=reject)
    assert refusals == ["apply_patch"], "proposed once, never retried"
    assert any(n.startswith("edit not applied: stats.py") and "rejected by bob" in n for n in ex.state.notes)
    # The tests still run and still fail: the report says so.
    assert any("exit code 1 (tests fail)" in n for n in ex.state.notes)
    assert "rejected by bob" in transcript[-1].text()
    assert ex.state.current_step is Step.done


def test_denied_command_is_noted_not_retried(tiny: Path) -> None:
    transcript, ex, _ = drive(tiny, constraints=["tests: make test"], allowed=[TEST_ARGV])
    assert [a for n, a in _tool_calls(transcript) if n == "run_command"] == [{"argv": ["make", "test"]}]
    assert any(n.startswith("verify: `make test` not run: ") and "denied by gate" in n for n in ex.state.notes)
    assert ex.state.current_step is Step.done


def test_no_test_hint_means_no_command(tiny: Path) -> None:
    transcript, ex, _ = drive(tiny)
    assert "run_command" not in [n for n, _ in _tool_calls(transcript)]
    assert any(n.startswith("verify: not run: no test command") for n in ex.state.notes)


def test_recovers_from_the_state_when_old_turns_are_gone(tiny: Path) -> None:
    """After compaction only the state block and the last turn remain: the agent carries on."""
    _transcript, _ex, requests = drive(tiny, allowed=[TEST_ARGV])
    # Replay the request that proposed the patch with everything but its last exchange dropped.
    i = next(i for i, r in enumerate(requests) if any(
        u.name == "apply_patch" for u in ScriptedProvider().complete(r).content if u.type == "tool_use"))
    full = requests[i]
    compacted = full.model_copy(update={"messages": [
        Message.user_text("<summary_of_earlier_work>\n## Goal\n...\n</summary_of_earlier_work>"),
        *full.messages[-2:],
    ]})
    a = ScriptedProvider().complete(full)
    b = ScriptedProvider().complete(compacted)
    assert [(u.name, u.input) for u in a.content if u.type == "tool_use"] == [
        (u.name, u.input) for u in b.content if u.type == "tool_use"]


def test_usage_comes_from_the_project_estimator(tiny: Path) -> None:
    _, _, requests = drive(tiny, max_turns=40)
    provider = ScriptedProvider()
    r = provider.complete(requests[3])
    assert r.usage.input_tokens == estimate_request(requests[3]) == provider.count_tokens(requests[3])
    assert r.usage.output_tokens == estimate_messages([Message(role="assistant", content=r.content)])
    assert r.usage.cache_read_input_tokens == r.usage.cache_creation_input_tokens == 0


def test_without_a_state_block_it_stops() -> None:
    r = get_provider("scripted").complete(ModelRequest(model="scripted", system="", messages=[Message.user_text("hi")]))
    assert r.stop_reason == "end_turn" and "no <task_state>" in r.content[0].text


def test_forensic_demo_sample(tmp_path: Path) -> None:
    ws = tmp_path / "forensic-demo"
    shutil.copytree(SAMPLES / "forensic-demo", ws, ignore=shutil.ignore_patterns("__pycache__"))
    assert not _tests_pass(ws)
    objective = "Invoice totals are lower than the sum of their line items. Find the cause and propose a fix."
    global OBJECTIVE
    saved, OBJECTIVE = OBJECTIVE, objective
    try:
        transcript, _ex, _ = drive(ws, constraints=[f"tests: {shlex.join(TEST_ARGV)}", "do not modify tests/"],
                                  allowed=[TEST_ARGV])
    finally:
        OBJECTIVE = saved
    patches = [a for n, a in _tool_calls(transcript) if n == "apply_patch"]
    assert [p["path"] for p in patches] == ["ledger/invoice.py"]
    assert "range(len(self.lines))" in patches[0]["new"]
    assert _tests_pass(ws)


@pytest.mark.parametrize(
    ("constraint", "path", "forbidden"),
    [
        ("do not modify tests/", "tests/test_stats.py", True),
        ("do not modify tests/", "stats.py", False),
        ("Never edit stats.py.", "stats.py", True),
        ("no changes to ledger/*.py", "ledger/invoice.py", True),
        ("This is a read-only review.", "stats.py", True),
        ("do not modify any files", "x.py", True),
        ("keep the public API stable", "stats.py", False),
    ],
)
def test_constraint_parsing(constraint: str, path: str, forbidden: bool) -> None:
    assert (Constraints.parse([constraint]).forbids_edit(path) is not None) is forbidden


def test_hints_and_terms() -> None:
    assert find_test_command("x", ["tests: `python -m unittest discover -s tests -q`"]) == [
        "python", "-m", "unittest", "discover", "-s", "tests", "-q"]
    assert find_test_command("Fix it.\ntest command: make check", []) == ["make", "check"]
    assert find_test_command("x", ["do not modify tests/"]) is None
    assert objective_terms(OBJECTIVE) == ["moving", "average", "reported", "stat", "helper"]
