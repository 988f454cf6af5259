"""Fast CLI checks, no stack needed: --help everywhere, usage errors (exit 2), the "stack not
running" message, and the renderers (meter, chart, SVG, durations)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from longrun import render
from longrun.cli import build_parser, main

LONGRUN = str(Path(sys.executable).parent / "longrun")
COMMANDS = [
    ["dev"], ["dev", "up"], ["dev", "down"], ["dev", "status"], ["worker"], ["start"], ["status"], ["watch"],
    ["runs"], ["approve"], ["reject"], ["pause"], ["resume"], ["cancel"], ["say"], ["compact-now"], ["audit"],
    ["usage"], ["compact"], ["facts"], ["demo"], ["approvers"], ["approvers", "add"], ["approvers", "list"],
    ["approvers", "revoke"], ["grant"], ["revoke-grant"], ["prune"], ["pin"], ["unpin"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_help_on_every_command(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([*command, "--help"])
    assert exit_.value.code == 0
    assert "usage: longrun" in capsys.readouterr().out


def test_every_reporting_command_takes_json() -> None:
    parser = build_parser()
    for command in (["dev", "up"], ["dev", "status"], ["start"], ["status"], ["watch"], ["runs"], ["approve"],
                    ["reject"], ["pause"], ["resume"], ["cancel"], ["say"], ["compact-now"], ["audit"], ["usage"],
                    ["compact"], ["facts"], ["approvers", "add"], ["approvers", "list"], ["approvers", "revoke"], ["grant"],
                    ["revoke-grant"], ["prune"], ["pin"], ["unpin"]):
        sub = parser
        for word in command:
            sub = next(a for a in sub._actions
                       if a.dest in ("command", "dev_command", "approvers_command")).choices[word]
        assert any("--json" in a.option_strings for a in sub._actions), command


def test_scripted_model_is_called_a_stand_in(capsys: pytest.CaptureFixture[str]) -> None:
    for command in (["start", "--help"], ["demo", "--help"], ["--help"]):
        with pytest.raises(SystemExit):
            main(command)
        out = " ".join(capsys.readouterr().out.split())
        assert "deterministic offline stand-in for a model" in out and "not an LLM" in out, command


@pytest.mark.parametrize("argv", [["nope"], ["status"], ["approve", "r", "--ttl", "1m"], ["audit", "r", "--format", "x"],
                                  ["start", "--objective", "x"], ["compact-now"], ["compact-now", "r", "extra"]])
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert "error:" in capsys.readouterr().err


@pytest.mark.parametrize("text", ["", "   ", "x" * 20_001])
def test_say_refuses_an_empty_or_oversized_text_before_anything_is_sent(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["say", "run-any", text]) == 2
    err = capsys.readouterr().err
    assert "say needs a text of 1 to 20,000 characters" in err and "nothing was sent" in err


@pytest.mark.slow
def test_stack_not_running_says_what_to_do(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("LONGRUN_DATABASE_URL", "TEMPORAL_ADDRESS", "ANTHROPIC_API_KEY")}
    env["LONGRUN_HOME"] = str(tmp_path / "empty-home")
    for args in (["status", "run-x"], ["runs"], ["approve", "run-x", "--as", "a"]):
        done = subprocess.run([LONGRUN, *args], env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 1, done.stderr
        assert "run `longrun dev up`" in done.stderr and "Traceback" not in done.stderr
    ws = subprocess.run([LONGRUN, "start", "--objective", "x", "--workspace", str(tmp_path / "missing")],
                        env=env, capture_output=True, text=True, timeout=60)
    assert ws.returncode == 2 and "does not exist" in ws.stderr  # checked before the stack is contacted


def test_parse_duration() -> None:
    assert [render.parse_duration(t) for t in ("45", "45s", "30m", "2h", "1d")] == [45, 45, 1800, 7200, 86400]
    for bad in ("", "0", "-5m", "soon", "5w"):
        with pytest.raises(ValueError, match="not a duration"):
            render.parse_duration(bad)


def test_meter_marks_the_trigger_and_overflow() -> None:
    line = render.meter(3_000, 6_000, 4_500, width=40)
    bar = line[line.index("[") + 1: line.index("]")]
    assert len(bar) == 40 and bar.index(render.TRIGGER_MARK) == 30 and bar.count(render.FULL) == 20
    assert "3.0k / 6.0k" in line and "OVER" not in line
    assert "OVER TRIGGER" in render.meter(5_000, 6_000, 4_500)


def test_chart_and_svg() -> None:
    points = [render.Point(1, 2_000), render.Point(2, 5_000, True, 3_000), render.Point(3, 3_500)]
    text = render.chart(points, limit=6_000, trigger=4_500, height=6)
    rows = text.splitlines()
    assert len(rows) == 6 + 3 and "trigger" in text and rows[-2].count("▼") == 2  # one marker + the legend
    svg = render.svg_chart(points, limit=6_000, trigger=4_500, title="t <&>")
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>") and "t &lt;&amp;&gt;" in svg
    assert svg.count("<rect") == 1 + len(points) and "trigger 4.5k" in svg


def test_table_aligns_numbers() -> None:
    out = render.table([("a", 5), ("bb", 123)], ["name", "n"]).splitlines()
    assert out[2].endswith("  5") and out[3].endswith("123")
