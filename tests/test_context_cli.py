"""`longrun compact` through `add_parser`/`run`: output shape, options and clear errors."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from longrun.cli import compact_cmd
from longrun.cli.parsers import compact as compact_parser
from longrun.context.transcript import normalize_pairs
from longrun.models import Message
from longrun.models.canonical import sha256_hex

BODY = "def f(x):\n    return x * 2  # line\n" * 400


def cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="longrun")
    compact_parser.register(parser.add_subparsers())
    code = compact_cmd.run(parser.parse_args(["compact", *argv]))
    out = capsys.readouterr()
    return code, out.out, out.err


def write_transcript(path: Path, n: int, tools: tuple[str, ...] = ("Read", "Grep")) -> list[str]:
    lines = [json.dumps({"role": "user", "content": "Fix the flaky test, but do not touch CI config."})]
    contents = []
    for i in range(n):
        tool = tools[i % len(tools)]
        lines.append(json.dumps({"role": "assistant", "content": [
            {"type": "tool_use", "id": f"t{i}", "name": tool, "input": {"file_path": f"lib/m{i}.ex"}}]}))
        content = f"{i}:" + BODY
        contents.append(content)
        lines.append(json.dumps({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": content}]}))
    lines.append(json.dumps({"role": "assistant", "content": "All done."}))
    path.write_text("\n".join(lines) + "\n")
    return contents


def test_json_output_is_the_request_and_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t = tmp_path / "t.jsonl"
    contents = write_transcript(t, 12)
    state = tmp_path / "s.json"
    state.write_text(json.dumps({"objective": "fix it", "constraints": ["do not touch CI config"], "next_action": "edit"}))
    code, out, err = cli([str(t), "--state", str(state), "--budget", "20000", "--keep", "2", "--clear-at-least", "0",
                          "--exclude-tools", "Grep", "--json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    assert set(data) == {"messages", "report"}
    last = data["messages"][-1]["content"][-1]["text"]
    assert '"do not touch CI config"' in last and '"next_action": "edit"' in last
    report = data["report"]
    assert report["tokens_sent_estimated"] <= 20_000 and report["budget"] == 20_000
    shas = {sha256_hex(c): i for i, c in enumerate(contents)}
    assert report["cleared"] and all(c["sha256"] in shas for c in report["cleared"])
    assert all(c["tool"] == "Read" for c in report["cleared"] if c["stage"] != "summarized")  # Grep excluded
    # every result of the transcript is either sent whole or referenced
    referenced = {c["sha256"] for c in report["cleared"]}
    assert all(sha in referenced or json.dumps(contents[i])[1:-1] in out for sha, i in shas.items())
    assert "longrun_" not in out


def test_human_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t = tmp_path / "t.jsonl"
    write_transcript(t, 6)
    code, out, _ = cli([str(t), "--budget", "8000"], capsys)
    assert code == 0
    assert "tokens after (est.)" in out and "outcome" in out and "cleared results" in out
    assert re.search(r"fact ledger +\d+ lines quoted, \d+ left out for size", out)


def test_missing_file_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli([str(tmp_path / "nope.jsonl")], capsys)
    assert code == 2 and "not found" in err


def test_malformed_line_names_its_number(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t = tmp_path / "t.jsonl"
    t.write_text('{"role": "user", "content": "hi"}\n\n{"role": "robot", "content": "x"}\n')
    code, _, err = cli([str(t)], capsys)
    assert code == 2 and f"{t}:3:" in err
    t.write_text('{"role": "user", "content": "hi"}\n{not json\n')
    code, _, err = cli([str(t)], capsys)
    assert code == 2 and ":2:" in err


@pytest.mark.parametrize("state_text", ["{broken", "[1, 2]", '{"next_action": "fly"}'])
def test_bad_state_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], state_text: str) -> None:
    t = tmp_path / "t.jsonl"
    write_transcript(t, 1)
    s = tmp_path / "s.json"
    s.write_text(state_text)
    code, _, err = cli([str(t), "--state", str(s)], capsys)
    assert code == 2 and str(s) in err


def test_late_tool_results_are_moved_next_to_their_use() -> None:
    wire = [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "x", "input": {}},
                                          {"type": "tool_use", "id": "b", "name": "x", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "1"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "c", "name": "x", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b", "content": "2"},
                                     {"type": "tool_result", "tool_use_id": "c", "content": "3"}]},
    ]
    fixed, moved = normalize_pairs([Message.from_wire(m) for m in wire])
    assert moved == 1
    assert [[getattr(b, "tool_use_id", None) for b in m.content] for m in fixed if m.role == "user"] == [["b", "a"], ["c"]]


def test_without_state_no_objective_is_taken_from_the_first_user_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 25, cause 6: the first user text may be a plan later rejected; rendered as the
    authoritative objective of the state block, it overrode what the conversation decided."""
    t = tmp_path / "t.jsonl"
    write_transcript(t, 12)
    code, out, err = cli([str(t), "--budget", "20000", "--json"], capsys)
    assert code == 0, err
    state_block = json.loads(out)["messages"][-1]["content"][-1]["text"]
    objective = json.loads(state_block[state_block.index("{"):state_block.rindex("}") + 1])["objective"]
    assert "Fix the flaky test" not in objective
    assert objective == compact_cmd.NO_OBJECTIVE
