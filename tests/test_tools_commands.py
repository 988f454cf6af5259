"""run_command: only exact allow-listed argv lists run, never through a shell."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from longrun.errors import CommandNotAllowed
from longrun.models.state import NextAction
from longrun.tools import RUN_COMMAND, ToolContext

PY = sys.executable


def _ctx(ws: Path, allowed: list[list[str]], timeout: float = 30.0) -> ToolContext:
    return ToolContext(run_id="r", workspace=ws, allowed_commands=allowed, command_timeout=timeout)


def _run(args: dict, ctx: ToolContext) -> str:
    assert RUN_COMMAND.run is not None
    return RUN_COMMAND.run(args, ctx).text


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "ws"
    w.mkdir()
    return w


def test_allowed_argv_runs_and_output_format(ws: Path) -> None:
    argv = [PY, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"]
    outcome = RUN_COMMAND.run({"argv": argv}, _ctx(ws, [argv]))  # type: ignore[misc]
    assert outcome.text == "exit code: 3\n--- stdout ---\nout\n--- stderr ---\nerr"
    assert outcome.external_id and len(outcome.external_id) == 64


def test_allowed_argv_runs_without_shell(ws: Path) -> None:
    marker = ws / "marker"
    argv = ["echo", f"hi; touch {marker}", "$(touch x)", "`touch y`"]
    text = _run({"argv": argv}, _ctx(ws, [argv]))
    assert f"hi; touch {marker} $(touch x) `touch y`" in text
    assert not marker.exists() and not (ws / "x").exists() and not (ws / "y").exists()


def test_runs_in_workspace_with_minimal_env(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-canary-should-not-leak-0000000000")
    argv = [PY, "-c", "import os, json; print(os.getcwd()); print(json.dumps(sorted(os.environ)))"]
    text = _run({"argv": argv}, _ctx(ws, [argv]))
    assert str(ws.resolve()) in text
    assert "canary" not in text and "ANTHROPIC_API_KEY" not in text
    assert '"HOME"' in text and '"LANG"' in text and '"PATH"' in text


INJECTIONS = [
    ["echo", "ok", ";", "touch", "MARKER"],
    ["echo", "ok;touch MARKER"],
    ["echo", "ok", "&&", "touch", "MARKER"],
    ["echo", "ok", "|", "touch", "MARKER"],
    ["echo", "$(touch MARKER)"],
    ["echo", "`touch MARKER`"],
    ["echo", "ok\ntouch MARKER"],
    ["sh", "-c", "touch MARKER"],
    ["touch", "MARKER"],
]


@pytest.mark.parametrize("argv", INJECTIONS)
def test_injections_are_refused_and_nothing_runs(ws: Path, argv: list[str]) -> None:
    marker = ws / "MARKER"
    argv = [a.replace("MARKER", str(marker)) for a in argv]
    ctx = _ctx(ws, [["echo", "ok"]])
    reason = RUN_COMMAND.check({"argv": argv}, ctx)  # type: ignore[misc]
    assert reason and "not on this run's allow-list" in reason and "['echo', 'ok']" in reason
    with pytest.raises(CommandNotAllowed, match=r"Allowed argv lists, exactly: \['echo', 'ok'\]"):
        _run({"argv": argv}, ctx)
    assert not marker.exists()


def test_argument_injection_is_refused(ws: Path, tmp_path: Path) -> None:
    target = tmp_path / "x"
    allowed = [PY, "-c", "import sys; open(sys.argv[-1], 'w').write('pwned') if len(sys.argv) > 1 else None"]
    argv = [*allowed, f"--output={target}"]
    ctx = _ctx(ws, [allowed])
    reason = RUN_COMMAND.check({"argv": argv}, ctx)  # type: ignore[misc]
    assert reason and "were appended to the allowed command" in reason
    with pytest.raises(CommandNotAllowed):
        _run({"argv": argv}, ctx)
    assert not target.exists()


def test_prefix_of_allowed_is_refused(ws: Path) -> None:
    with pytest.raises(CommandNotAllowed):
        _run({"argv": ["pytest"]}, _ctx(ws, [["pytest", "-q"]]))


def test_empty_allow_list_says_so(ws: Path) -> None:
    with pytest.raises(CommandNotAllowed, match="allows no commands"):
        _run({"argv": ["ls"]}, _ctx(ws, []))


def test_timeout_is_reported_and_process_killed(ws: Path) -> None:
    argv = [PY, "-c", "import time; print('started', flush=True); time.sleep(30)"]
    outcome = RUN_COMMAND.run({"argv": argv}, _ctx(ws, [argv], timeout=0.5))  # type: ignore[misc]
    assert outcome.is_error
    assert outcome.text.startswith("exit code: -9 (timed out after 0.5 s; the command was killed)")
    assert "started" in outcome.text


def test_huge_output_is_capped(ws: Path) -> None:
    argv = [PY, "-c", "import sys; sys.stdout.write('a' * 5_000_000); sys.stdout.buffer.write(b'\\xff\\x00')"]
    text = _run({"argv": argv}, _ctx(ws, [argv]))
    assert len(text) < 300_000
    assert "[truncated: 5000002 bytes, showing the first 200000]" in text


def test_invalid_utf8_output_is_replaced(ws: Path) -> None:
    argv = [PY, "-c", "import sys; sys.stdout.buffer.write(b'ok \\xff\\x00 done')"]
    text = _run({"argv": argv}, _ctx(ws, [argv]))
    assert "ok \ufffd\ufffd done" in text and "\x00" not in text
    assert "replaced with U+FFFD" in text


def test_reconcile_is_none_and_explains_repeatability(ws: Path) -> None:
    out = RUN_COMMAND.reconcile({"argv": ["echo"]}, _ctx(ws, []))  # type: ignore[misc]
    assert out.status == "none" and "repeatable" in out.detail


def test_allowed_under_inspect_and_test_only() -> None:
    assert RUN_COMMAND.allowed_next_actions == {NextAction.inspect, NextAction.test}
    assert RUN_COMMAND.kind == "effect" and not RUN_COMMAND.needs_approval
