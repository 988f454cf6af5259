"""The scripted agent delegates breadth-first reading to subagents, and answers as one.

Pure, like tests/test_provider_scripted.py: an in-test executor runs the tools for real on a copy of
a sample workspace. It answers a `task` call the way the workflow does: it builds the child's
objective with the activity's own `longrun.subagents.child_objective` (`Subagent brief:`, the brief,
the `paths` under `Files:`, the answer shape), copies the parent's constraints into the child's state, and runs a child ScriptedProvider loop in-process with
the read-only tools only; the tool result is the child's final text, or `worker failed: ...`.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from longrun.context.state_block import render_state_block
from longrun.models import Message, ModelRequest, Step, TaskState, TextBlock, ToolResultBlock
from longrun.models.provider import ToolSpec
from longrun.providers import ScriptedProvider
from longrun.providers.scripted import RULE_IDS, Finding, format_answer
from longrun.subagents import (
    ANSWER_SHAPE,
    BRIEF_PREFIX,
    MAX_ANSWER_WORDS,
    brief_files,
    child_objective,
    parse_answer,
)
from tests.test_provider_scripted import FIXED_NOW, MiniExecutor

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
TEST_ARGV = [sys.executable, "-m", "unittest", "discover", "-s", "tests", "-q"]
WIDE_OBJECTIVE = "The weekly demand forecast for depot items comes out too low. Find the defect and propose a fix."
TINY_OBJECTIVE = "The moving averages reported by the stats helper look wrong. Find the defect and propose a fix."
READ_ONLY = ("list_dir", "read_file", "grep", "read_artifact")
PARENT_TOOLS = (*READ_ONLY, "write_note", "record_decision", "set_next_action", "complete_stage", "apply_patch",
                "run_command")
CHILD_TURN_CAP = 10


def specs(names: tuple[str, ...]) -> list[ToolSpec]:
    return [ToolSpec(name=n, description=n, input_schema={"type": "object"}) for n in names]


def loop(
    provider: ScriptedProvider, ex: MiniExecutor, opening: str, tools: tuple[str, ...], max_turns: int
) -> tuple[list[Message], bool]:
    """Run the agent until it answers (True) or `max_turns` is reached (False)."""
    transcript = [Message.user_text(opening)]
    for _ in range(max_turns):
        shown = Message(role="user", content=[*transcript[-1].content, TextBlock(text=render_state_block(ex.state))])
        request = ModelRequest(model="scripted", system="You are a forensic code reviewer.",
                               messages=[*transcript[:-1], shown], tools=specs(tools))
        response = provider.complete(request)
        transcript.append(Message(role="assistant", content=response.content))
        if response.stop_reason == "end_turn":
            return transcript, True
        results = []
        for use in response.content:
            if use.type == "tool_use":
                text, err = ex.run(use.name, use.input)
                results.append(ToolResultBlock(tool_use_id=use.id, content=text, is_error=err))
        transcript.append(Message(role="user", content=results))
    return transcript, False


class ChildExecutor(MiniExecutor):
    """A subagent's tools: the read-only ones, nothing else."""

    def run(self, name: str, args: dict[str, Any]) -> tuple[str, bool]:
        if name not in READ_ONLY:
            self.calls.append((name, args))
            return f"tool {name!r} is not available to a subagent (read-only tools only)", True
        return super().run(name, args)

    def t_read_artifact(self, sha256: str) -> str:
        raise KeyError(f"no artifact {sha256}")


class Child:
    """One child run, as the executor saw it."""

    def __init__(self, objective: str, constraints: list[str], transcript: list[Message], calls: list, answer: str):
        self.objective, self.constraints, self.transcript, self.calls, self.answer = (
            objective, constraints, transcript, calls, answer)


class ParentExecutor(MiniExecutor):
    """The parent's tools, plus `task`: a child ScriptedProvider loop on the brief."""

    def __init__(self, *args: Any, fail: Callable[[int, list[str]], str | None] = lambda i, p: None, **kw: Any):
        super().__init__(*args, **kw)
        self.fail = fail
        self.children: list[Child] = []

    def run(self, name: str, args: dict[str, Any]) -> tuple[str, bool]:
        if name == "task":
            self.calls.append((name, args))
            return self.t_task(**args)
        return super().run(name, args)

    def t_task(self, brief: str, paths: list[str] | None = None) -> tuple[str, bool]:
        assert len(brief) <= 8000 and len(paths or []) <= 50
        index = len(self.children)
        objective = child_objective(brief, list(paths or []))  # what longrun.activities.children writes
        state = TaskState(run_id=f"{self.state.run_id}.c{index}", state_version=1, objective=objective,
                          constraints=list(self.state.constraints), updated_at=FIXED_NOW)
        ex = ChildExecutor(self.ws, state, [], lambda tool, args: "a subagent has no approvals")
        opening = f"Objective: {objective}\nYou are a subagent: read-only tools, no approvals, no further delegation."
        transcript, answered = loop(ScriptedProvider(), ex, opening, READ_ONLY, CHILD_TURN_CAP)
        failure = self.fail(index, list(paths or []))
        if failure is not None:
            answer, err = f"worker failed: {failure}", True
        elif not answered:
            answer, err = f"worker failed: turn cap of {CHILD_TURN_CAP} reached", True
        else:
            answer, err = transcript[-1].text(), False
        self.children.append(Child(objective, list(state.constraints), transcript, ex.calls, answer))
        return answer, err


def drive(ws: Path, objective: str, constraints: list[str], *, tools: tuple[str, ...] = (*PARENT_TOOLS, "task"),
          allowed: list[list[str]] | None = None, fail: Callable[[int, list[str]], str | None] = lambda i, p: None,
          max_turns: int = 60) -> tuple[list[Message], ParentExecutor]:
    state = TaskState(run_id="run-wide", state_version=1, objective=objective, constraints=constraints,
                      updated_at=FIXED_NOW)
    ex = ParentExecutor(ws, state, allowed or [], lambda tool, args: None, fail=fail)
    transcript, answered = loop(ScriptedProvider(), ex, f"Start the review. Objective: {objective}", tools, max_turns)
    assert answered, f"the scripted agent did not stop within {max_turns} turns"
    return transcript, ex


def copy(name: str, to: Path) -> Path:
    ws = to / name
    shutil.copytree(SAMPLES / name, ws, ignore=shutil.ignore_patterns("__pycache__"))
    return ws


def _tests_pass(ws: Path) -> bool:
    return subprocess.run(TEST_ARGV, cwd=ws, capture_output=True, timeout=60).returncode == 0


def calls_of(transcript: list[Message]) -> list[tuple[str, dict[str, Any]]]:
    return [(u.name, u.input) for m in transcript if m.role == "assistant" for u in m.tool_uses()]


WIDE_CONSTRAINTS = [f"tests: {shlex.join(TEST_ARGV)}", "do not modify tests/", "Keep the public API of depot stable."]
FIX = {"path": "depot/smoothing.py", "old": "    return sum(window) // len(window)",
       "new": "    return sum(window) / len(window)"}


@pytest.fixture
def wide(tmp_path: Path) -> Path:
    return copy("wide", tmp_path)


def test_wide_sample_has_a_planted_defect_its_tests_see(wide: Path) -> None:
    assert not _tests_pass(wide)
    modules = [p for p in (wide / "depot").glob("*.py")]
    assert 10 <= len(modules) <= 15 and (wide / "README.md").is_file()


def test_wide_delegates_in_parallel_and_fixes_the_bug_a_child_found(wide: Path) -> None:
    transcript, ex = drive(wide, WIDE_OBJECTIVE, WIDE_CONSTRAINTS, allowed=[TEST_ARGV])

    # One turn holds every task call, and nothing else: the workflow runs them in parallel.
    task_turns = [m for m in transcript if m.role == "assistant" and any(u.name == "task" for u in m.tool_uses())]
    assert len(task_turns) == 1
    uses = task_turns[0].tool_uses()
    assert 2 <= len(uses) <= 3 and {u.name for u in uses} == {"task"}
    groups = [u.input["paths"] for u in uses]
    assert sum(len(g) for g in groups) > 4 and len({p for g in groups for p in g}) == sum(len(g) for g in groups)
    assert any("depot/smoothing.py" in g for g in groups)

    # Children answered with sourced findings; one found the planted bug.
    assert len(ex.children) == len(uses)
    for child in ex.children:
        assert child.answer.startswith("FINDINGS:") and "(source: " in child.answer
    finder = [c for c in ex.children if "depot/smoothing.py:8: rule floor-division-mean" in c.answer]
    assert len(finder) == 1 and "(source: depot/smoothing.py:8)" in finder[0].answer

    # The parent recorded it from the child's answer, then re-read the file itself and proposed the fix.
    assert any(d.summary.startswith("Suspect defect in depot/smoothing.py line 8")
               and "subagent task" in d.reason and "depot/smoothing.py:8" in d.reason for d in ex.state.decisions)
    assert any(n.startswith("survey: delegated task ") for n in ex.state.notes)
    parent_reads = [a["path"] for n, a in calls_of(transcript) if n == "read_file"]
    assert parent_reads == ["depot/smoothing.py"], "the parent reads only the suspect, before editing it"
    assert [a for n, a in calls_of(transcript) if n == "apply_patch"] == [FIX]
    assert _tests_pass(wide)
    assert any(n.startswith("verify: ") and "exit code 0" in n for n in ex.state.notes)
    assert ex.state.current_step is Step.done
    report = transcript[-1].text()
    assert "depot/smoothing.py line 8" in report and "Subagent task 2/3" in report


def test_tiny_and_forensic_demo_do_not_delegate(tmp_path: Path) -> None:
    """Few candidates: the agent reads them itself, exactly as without a `task` tool."""
    for name, objective, constraints in (
        ("tiny", TINY_OBJECTIVE, [f"tests: {shlex.join(TEST_ARGV)}"]),
        ("forensic-demo", "Invoice totals are lower than the sum of their line items. Find the cause and "
         "propose a fix.", [f"tests: {shlex.join(TEST_ARGV)}", "do not modify tests/"]),
    ):
        offered, ex = drive(copy(name, tmp_path / "offered"), objective, constraints, allowed=[TEST_ARGV])
        plain, _ = drive(copy(name, tmp_path / "plain"), objective, constraints, tools=PARENT_TOOLS,
                         allowed=[TEST_ARGV])
        assert "task" not in [n for n, _ in calls_of(offered)] and ex.children == []
        assert calls_of(offered) == calls_of(plain)
        assert [n for n, _ in calls_of(offered)].count("apply_patch") == 1


def test_briefs_carry_the_constraints_and_answers_keep_the_shape(wide: Path) -> None:
    _transcript, ex = drive(wide, WIDE_OBJECTIVE, WIDE_CONSTRAINTS, allowed=[TEST_ARGV])
    sources = [line.strip() for f in wide.rglob("*.py") for line in f.read_text().splitlines()
               if len(line.strip()) > 20]
    assert ex.children
    for child in ex.children:
        brief = child.objective
        assert brief.startswith(BRIEF_PREFIX + "\n")
        for c in WIDE_CONSTRAINTS:
            assert f"- {c}" in brief, "the brief copies the parent's constraints verbatim"
        assert child.constraints == WIDE_CONSTRAINTS
        assert WIDE_OBJECTIVE in brief and brief_files(brief)
        # Read-only: the child used only the read tools, and read the files of its brief.
        assert {n for n, _ in child.calls} <= set(READ_ONLY)
        assert sorted(a["path"] for n, a in child.calls if n == "read_file") == sorted(brief_files(brief))
        # The answer: the shape, <= 400 words, no line of any file, no question.
        answer = child.answer
        lines = answer.splitlines()
        assert lines[0] == "FINDINGS:" and "UNCERTAIN:" in lines
        assert all(line.startswith("- ") for line in lines if line not in ("FINDINGS:", "UNCERTAIN:"))
        assert len(answer.split()) <= MAX_ANSWER_WORDS
        assert not [s for s in sources if s in answer]
        assert "?" not in answer
        assert child.transcript[-1].tool_uses() == [], "text only, end_turn"
        for line in lines[1:lines.index("UNCERTAIN:")]:
            assert re.search(r"\(source: [\w/.]+:\d+(-\d+)?\)$", line), line


@pytest.mark.parametrize("failing", ["depot/smoothing.py", "depot/restock.py"])
def test_a_failed_worker_is_noted_and_the_review_goes_on(wide: Path, failing: str) -> None:
    def fail(index: int, paths: list[str]) -> str | None:
        return "child run hit its turn cap (12 turns)" if failing in paths else None

    transcript, ex = drive(wide, WIDE_OBJECTIVE, WIDE_CONSTRAINTS, allowed=[TEST_ARGV], fail=fail)
    failed = [n for n in ex.state.notes if n.startswith("survey: delegated task ") and "worker failed: " in n]
    assert len(failed) == 1 and failing in failed[0] and "turn cap" in failed[0]
    assert ex.state.current_step is Step.done
    assert "worker failed: child run hit its turn cap" in transcript[-1].text()
    # Whichever group failed, the planted bug is still found and fixed: by a sibling's finding, or
    # by the parent reading the failed group's files itself when no sibling found anything.
    assert [a for n, a in calls_of(transcript) if n == "apply_patch"] == [FIX]
    assert _tests_pass(wide)
    parent_reads = [a["path"] for n, a in calls_of(transcript) if n == "read_file"]
    if failing == "depot/smoothing.py":
        group = next(a["paths"] for n, a in calls_of(transcript) if n == "task" and failing in a["paths"])
        assert parent_reads[:-1] == group[: group.index(failing) + 1], "read the failed group itself, up to the bug"
    else:
        assert parent_reads == ["depot/smoothing.py"]


def test_same_input_same_transcript(tmp_path: Path) -> None:
    runs = []
    for name in ("a", "b"):
        transcript, ex = drive(copy("wide", tmp_path / name), WIDE_OBJECTIVE, WIDE_CONSTRAINTS, allowed=[])
        everything = [transcript, *(c.transcript for c in ex.children)]
        runs.append(json.dumps([[m.to_wire() for m in t] for t in everything], sort_keys=True))
    assert runs[0] == runs[1] and len(runs[0]) > 5000


# ---------------------------------------------------------------------------------------------
# The answer format and the child policy alone
# ---------------------------------------------------------------------------------------------


def test_answer_round_trip_and_word_limit() -> None:
    found = [Finding(f"pkg/m{i:02d}.py", 10 + i, "off-by-one-range", "`range(len(xs) - 1)` never visits the last "
                     "element of xs", "for i in range(len(xs) - 1):") for i in range(60)]
    clean = [(f"pkg/c{i:02d}.py", 30) for i in range(40)]
    text = format_answer(found[:2], clean[:3], ["pkg/x.py: could not read it: PermissionError"])
    back = parse_answer(text, RULE_IDS)
    assert [(f.path, f.line, f.rule) for f in back.findings] == [("pkg/m00.py", 10, "off-by-one-range"),
                                                                 ("pkg/m01.py", 11, "off-by-one-range")]
    assert back.clean == ["pkg/c00.py", "pkg/c01.py", "pkg/c02.py"] and back.uncertain and back.shaped
    big = format_answer(found, clean, [])
    assert len(big.split()) <= MAX_ANSWER_WORDS and "not listed (400-word limit)" in big
    assert "for i in range" not in big
    assert parse_answer(big, RULE_IDS).findings, "the cut keeps the first findings"


def test_parse_answer_tolerates_a_model_written_answer() -> None:
    text = ("FINDINGS:\n"
            "* lib/a.py:14 uses a floor-division-mean, truncating the mean (source: lib/a.py:14)\n"
            "- lib/b.py looks clean (source: lib/b.py:1-40)\n"
            "- the cache is never invalidated (source: lib/c.py:7)\n"
            "UNCERTAIN:\n- none\n")
    back = parse_answer(text, RULE_IDS)
    assert [(f.path, f.line, f.rule) for f in back.findings] == [("lib/a.py", 14, "floor-division-mean")]
    assert back.clean == ["lib/b.py"] and len(back.other) == 1 and back.uncertain == []
    assert not parse_answer("I could not finish.", RULE_IDS).shaped


def test_child_without_files_greps_and_reports_unreadable_files(wide: Path) -> None:
    brief = f"{BRIEF_PREFIX}\nObjective of the parent run: {WIDE_OBJECTIVE}\n\n{ANSWER_SHAPE}"
    state = TaskState(run_id="c", state_version=1, objective=brief, updated_at=FIXED_NOW)
    ex = ChildExecutor(wide, state, [], lambda t, a: "no")
    transcript, answered = loop(ScriptedProvider(), ex, f"Objective: {brief}", READ_ONLY, CHILD_TURN_CAP)
    assert answered and next(n for n, _ in ex.calls) == "grep"
    assert "depot/smoothing.py:8: rule floor-division-mean" in transcript[-1].text()

    missing = f"{BRIEF_PREFIX}\nCheck these.\nFiles:\n- depot/nope.py\n- depot/units.py\n\n{ANSWER_SHAPE}"
    ex = ChildExecutor(wide, state.model_copy(update={"objective": missing}), [], lambda t, a: "no")
    transcript, answered = loop(ScriptedProvider(), ex, f"Objective: {missing}", READ_ONLY, CHILD_TURN_CAP)
    answer = parse_answer(transcript[-1].text(), RULE_IDS)
    assert answered and answer.clean == ["depot/units.py"]
    assert len(answer.uncertain) == 1 and answer.uncertain[0].startswith("depot/nope.py: could not read it")
    assert [a["path"] for n, a in ex.calls].count("depot/nope.py") == 2, "a failed read is retried once, no more"
