"""samples/refactor: a rename across fifteen modules and one module moved, done by the scripted
agent's refactor policy.

The whole runs (real Postgres, the real Temporal dev server) show what a standing approval is for:
with a scope granted at the first request (the move), one human approval and fifteen audited
scope uses do the refactor, on the run's own git branch, one commit per edit, which `longrun diff`
shows; without it, every file waits for a human. The fast tests drive the policy offline
over the real file and state tools, with the gate's next_action rule and evidence check applied
in between, to pin down its decisions (one patch per file, constraints respected, a rejected edit
not retried, the same calls after compaction).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from longrun import cli
from longrun.auth.audit_check import verify_decisions
from longrun.client import calls as client_calls
from longrun.client import decide
from longrun.context.state_block import render_state_block
from longrun.models import Message, ModelRequest, NextAction, Step, TaskState, TextBlock, ToolResultBlock
from longrun.models.audit import ApprovalRequested, ChangeSetOpened, ScopeUsed, ToolRan
from longrun.models.spec import RunSpec
from longrun.providers import ScriptedProvider
from longrun.providers.scripted.rename import Move, NoPatch, Rename, RenameKnowledge, RenamePatch, plan_patch
from longrun.store import Store
from longrun.tools import default_registry
from longrun.tools.base import ToolContext
from tests.support.harness import SAMPLES, copy_sample, running_worker

TEST_ARGV = [sys.executable, "-m", "unittest", "discover", "-s", "tests", "-q"]
OBJECTIVE = ("Rename `calc_total` to `lines_subtotal` across the package: the name misleads, it is the goods "
             "before discounts, VAT and shipping. And move the module `tillbook.reports` to `tillbook.reporting.daily`.")
MOVE = ("src/tillbook/reports.py", "src/tillbook/reporting/daily.py")
CONSTRAINTS = ["Do not modify tests/.", f"tests: {shlex.join(TEST_ARGV)}"]
OLD_WORD = re.compile(r"\bcalc_total\b")
SRC_FILES = sorted(
    p.relative_to(SAMPLES / "refactor").as_posix()
    for p in (SAMPLES / "refactor" / "src").rglob("*.py") if OLD_WORD.search(p.read_text())
)
PATCHED = [MOVE[1] if p == MOVE[0] else p for p in SRC_FILES]
"""Where each file is patched: the moved module at its new place."""
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def old_name_left(ws: Path) -> list[str]:
    return sorted(p.relative_to(ws).as_posix() for p in (ws / "src").rglob("*.py") if OLD_WORD.search(p.read_text()))


def suite_passes(ws: Path) -> bool:
    return subprocess.run(TEST_ARGV, cwd=ws, capture_output=True, timeout=60).returncode == 0


def test_the_sample_needs_the_rename_in_fifteen_modules_and_one_move(tmp_path: Path) -> None:
    assert len(SRC_FILES) == 15 and "src/tillbook/lines.py" in SRC_FILES and MOVE[0] in SRC_FILES
    ws = copy_sample("refactor", tmp_path)
    assert not suite_passes(ws), "before the refactor the naming and report tests fail"
    for rel in SRC_FILES:
        path = ws / rel
        path.write_text(OLD_WORD.sub("lines_subtotal", path.read_text()))
    assert not suite_passes(ws), "the rename alone is not enough: the module must move"
    (ws / MOVE[1]).parent.mkdir()
    (ws / MOVE[0]).rename(ws / MOVE[1])
    trade = ws / "src/tillbook/trade.py"
    trade.write_text(trade.read_text().replace("tillbook.reports", "tillbook.reporting.daily"))
    assert suite_passes(ws), "after both every test passes"
    assert "calc_total_weight" in (ws / "src/tillbook/shipping.py").read_text(), "another name: it stays"


@pytest.mark.parametrize(("objective", "rename"), [
    (OBJECTIVE, Rename("calc_total", "lines_subtotal", Move("tillbook.reports", "tillbook.reporting.daily"))),
    ("Rename `calc_total` to `lines_subtotal`.", Rename("calc_total", "lines_subtotal")),
    ("Please replace `old_helper` with `new_helper` everywhere.", Rename("old_helper", "new_helper")),
    ("rename `a` -> `b`", Rename("a", "b")),
    ("Rename calc_total to lines_subtotal.", None),  # no backticks: not recognised
    ("Rename `x` to `x`.", None),
    ("The moving averages reported by the stats helper look wrong. Find the defect and propose a fix.", None),
])
def test_only_a_rename_objective_chooses_the_refactor_policy(objective: str, rename: Rename | None) -> None:
    assert Rename.parse(objective) == rename


def numbered(text: str) -> str:
    return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(text.splitlines(), 1))


def test_one_patch_per_file_covers_every_occurrence_and_only_whole_words() -> None:
    rename = Rename("calc_total", "lines_subtotal")
    text = (SAMPLES / "refactor/src/tillbook/tax.py").read_text()
    patch = plan_patch("tax.py", numbered(text), rename)
    assert isinstance(patch, RenamePatch) and patch.occurrences == 3
    assert text.count(patch.old) == 1 and "calc_total" not in text.replace(patch.old, patch.new)
    assert patch.old.startswith("from tillbook.lines import calc_total") and "def vat" in patch.old
    shipping = (SAMPLES / "refactor/src/tillbook/shipping.py").read_text()
    patch = plan_patch("shipping.py", numbered(shipping), rename)
    assert isinstance(patch, RenamePatch) and patch.occurrences == 2
    assert shipping.replace(patch.old, patch.new).count("calc_total_weight") == 2
    repeated = "x = calc_total(a)\ny = 1\nx = calc_total(a)\n"  # the span occurs once only when grown
    patch = plan_patch("r.py", numbered("calc_total(a)\ny = 1\n" + repeated), rename)
    assert isinstance(patch, RenamePatch) and patch.occurrences == 3
    assert plan_patch("p.py", numbered(text) + "\n[truncated at the 2000-line limit; ...]", rename) == NoPatch(
        "read_file did not show it whole (truncated or not clean UTF-8); not patched from a partial read")
    assert plan_patch("n.py", numbered("y = 1\n"), rename) == NoPatch("no `calc_total` in it when read",
                                                                    nothing_to_do=True)


def test_the_notes_read_back_even_flattened_and_with_odd_paths() -> None:
    k = RenameKnowledge()
    for note in ["rename survey: `f` in 2 file(s): my dir/a: b.py (2), src/c.py (1)",
                 "rename done: my dir/a: b.py: 2 occurrence(s), patched",
                 "rename failed:\n  src/c.py: approval rejected by bob"]:  # a ledger may flatten a note
        k.learn(note)
    assert k.found == {"my dir/a: b.py": 2, "src/c.py": 1}
    assert k.done == {"my dir/a: b.py": "2 occurrence(s), patched"} and k.count_of(k.done["my dir/a: b.py"]) == 2
    assert k.failed == {"src/c.py": "approval rejected by bob"} and k.todo() == []


# --- offline: the policy over the real tools ----------------------------------------------------

Approver = Callable[[str, dict[str, Any]], str | None]
"""(tool, args) -> None to approve, or the text of a rejection."""


class Executor:
    """The real file and state tools on a workspace copy, with the gate's next_action rule and the
    tool's own evidence check before each call; commands run as a plain subprocess."""

    def __init__(self, ws: Path, constraints: list[str], approve: Approver) -> None:
        self.registry = default_registry()
        self.ctx = ToolContext(run_id="run-offline", workspace=ws.resolve(), allowed_commands=[TEST_ARGV])
        self.state = TaskState(run_id="run-offline", state_version=1, objective=OBJECTIVE, constraints=constraints,
                               updated_at=NOW)
        self.approve = approve
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def run(self, name: str, args: dict[str, Any]) -> tuple[str, bool]:
        self.calls.append((name, args))
        tool = self.registry.get(name)
        if self.state.next_action not in tool.allowed_next_actions:
            return f"denied by the gate: {name} is not allowed while next_action is {self.state.next_action.value}", True
        refusal = tool.check(args, self.ctx) if tool.check else None
        if refusal:
            return f"denied by the gate: {refusal}", True
        if tool.needs_approval and (rejected := self.approve(name, args)):
            return rejected, True
        if tool.apply_state is not None:
            self.state = tool.apply_state(self.state, args, NOW).model_copy(
                update={"state_version": self.state.state_version + 1})
            return "ok", False
        if name == "run_command":
            proc = subprocess.run(args["argv"], cwd=self.ctx.workspace, capture_output=True, text=True, timeout=60)
            return f"exit code: {proc.returncode}\n{proc.stderr}", False
        assert tool.run is not None
        outcome = tool.run(args, self.ctx)
        return outcome.text, outcome.is_error


def drive(ws: Path, *, constraints: list[str] = CONSTRAINTS, approve: Approver = lambda tool, args: None,
          max_turns: int = 60) -> tuple[list[Message], Executor, list[ModelRequest]]:
    ex = Executor(ws, constraints, approve)
    provider = ScriptedProvider()
    transcript = [Message.user_text(f"Start. Objective: {OBJECTIVE}")]
    requests: list[ModelRequest] = []
    for _ in range(max_turns):
        shown = Message(role="user", content=[*transcript[-1].content, TextBlock(text=render_state_block(ex.state))])
        request = ModelRequest(model="scripted", system="s", messages=[*transcript[:-1], shown])
        requests.append(request)
        response = provider.complete(request)
        transcript.append(Message(role="assistant", content=response.content))
        if response.stop_reason == "end_turn":
            return transcript, ex, requests
        results = []
        for use in response.content:
            if use.type == "tool_use":
                text, err = ex.run(use.name, use.input)
                results.append(ToolResultBlock(tool_use_id=use.id, content=text, is_error=err))
        transcript.append(Message(role="user", content=results))
    raise AssertionError(f"the refactor did not finish within {max_turns} turns")


def calls_named(ex: Executor, name: str) -> list[dict[str, Any]]:
    return [args for n, args in ex.calls if n == name]


def test_the_policy_moves_the_module_then_renames_every_file_once_and_runs_the_tests(tmp_path: Path) -> None:
    ws = copy_sample("refactor", tmp_path)
    transcript, ex, _ = drive(ws)
    assert calls_named(ex, "glob") == [{"pattern": "**/tillbook/reports.py"}]
    assert calls_named(ex, "move_path") == [{"path": MOVE[0], "to": MOVE[1]}]
    edits = [n for n, _ in ex.calls if n in ("move_path", "apply_patch")]
    assert edits[0] == "move_path", "the move first, so each file's patch can fix its imports"
    assert [a["path"] for a in calls_named(ex, "apply_patch")] == PATCHED, "one patch per file, in path order"
    trade = next(a for a in calls_named(ex, "apply_patch") if a["path"].endswith("trade.py"))
    assert "from tillbook.reporting.daily import average_basket" in trade["new"]
    assert old_name_left(ws) == [] and suite_passes(ws)
    assert not (ws / MOVE[0]).exists() and (ws / MOVE[1]).exists()
    assert calls_named(ex, "set_next_action") == [], "entering the fix stage set next_action=edit already"
    assert calls_named(ex, "run_command") == [{"argv": TEST_ARGV}]
    assert "calc_total" in (ws / "tests/test_naming.py").read_text(), "tests/ is left alone"
    notes = ex.state.notes
    assert any(n.startswith('rename skipped: tests/test_naming.py: constraint "Do not modify tests/."') for n in notes)
    assert any(n.startswith("rename check: no `calc_total` left; in skipped file(s) only: tests/test_naming.py")
               for n in notes)
    assert any(n.startswith("verify: ") and "exit code 0 (tests pass)" in n for n in notes)
    assert ex.state.current_step is Step.done and ex.state.next_action is NextAction.stop
    report = transcript[-1].text()
    assert "Files changed, `calc_total` -> `lines_subtotal` (15): src/tillbook/basket.py (2)" in report
    assert f"Moved: `tillbook.reports` -> `tillbook.reporting.daily` ({MOVE[0]} -> {MOVE[1]})" in report
    assert all(p in report for p in PATCHED) and "exit code 0 (tests pass)" in report
    assert "Change set:" not in report, "no git here: the folder was edited in place"
    assert len(transcript) < 60, "a file costs one turn: its patch goes out with the next file's read"


def test_a_rejected_edit_is_noted_not_retried_and_the_rest_goes_on(tmp_path: Path) -> None:
    ws = copy_sample("refactor", tmp_path)
    asked: list[str] = []

    def approve(tool: str, args: dict[str, Any]) -> str | None:
        asked.append(args["path"])
        return "approval rejected by bob: not this module" if args["path"].endswith("refunds.py") else None

    transcript, ex, _ = drive(ws, approve=approve)
    assert asked == [MOVE[0], *PATCHED], "the move, then each file proposed once"
    assert old_name_left(ws) == ["src/tillbook/refunds.py"]
    assert any(n.startswith("rename failed: src/tillbook/refunds.py: approval rejected by bob") for n in ex.state.notes)
    assert any("exit code 1 (tests fail)" in n for n in ex.state.notes), "the naming test still fails"
    report = transcript[-1].text()
    assert "Not changed: src/tillbook/refunds.py: approval rejected by bob" in report and "(14):" in report


def test_a_rejected_move_leaves_the_imports_alone(tmp_path: Path) -> None:
    ws = copy_sample("refactor", tmp_path)

    def approve(tool: str, args: dict[str, Any]) -> str | None:
        return "approval rejected by bob: keep the module where it is" if tool == "move_path" else None

    transcript, ex, _ = drive(ws, approve=approve)
    assert (ws / MOVE[0]).exists() and old_name_left(ws) == []
    assert all("tillbook.reporting" not in a["new"] for a in calls_named(ex, "apply_patch")), \
        "no import points at a module that did not move"
    assert "Not moved: `tillbook.reports`: approval rejected by bob" in transcript[-1].text()


def test_the_same_calls_after_old_turns_are_compacted_away(tmp_path: Path) -> None:
    _, _, requests = drive(copy_sample("refactor", tmp_path))
    provider = ScriptedProvider()
    mid = [r for r in requests if any(u.name == "apply_patch" for u in provider.complete(r).content
                                      if u.type == "tool_use")][4]
    compacted = mid.model_copy(update={"messages": [
        Message.user_text("<summary_of_earlier_work>\n## Goal\n...\n</summary_of_earlier_work>"), *mid.messages[-2:]]})
    calls = [[(u.name, u.input) for u in provider.complete(r).content if u.type == "tool_use"] for r in (mid, compacted)]
    assert calls[0] == calls[1] and calls[0][-2][0] == "apply_patch"


# --- whole runs: Temporal, Postgres, the gate, signed approvals ------------------------------------


def refactor_spec(ws: Path) -> RunSpec:
    return RunSpec(objective=OBJECTIVE, constraints=CONSTRAINTS, workspace=str(ws), approvers=["alice"],
                   allowed_commands=[TEST_ARGV], model="scripted")


def git_sample(tmp_path: Path) -> Path:
    """The sample as a user has it: a git repository with everything committed."""
    ws = copy_sample("refactor", tmp_path)
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.name=t", "-c", "user.email=t@x", "commit", "-q", "-m", "tillbook"]):
        subprocess.run(["git", *argv], cwd=ws, check=True, capture_output=True)
    return ws


def git_out(ws: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=ws, check=True, capture_output=True, text=True).stdout


@pytest.mark.slow
async def test_one_approval_and_a_scope_do_the_refactor_on_a_branch(
    store: Store, temporal_client: Client, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("LONGRUN_HOME", str(tmp_path / "home"))
    ws = git_sample(tmp_path)
    async with running_worker(temporal_client, store) as h:
        run_id = await h.start(refactor_spec(ws))
        first = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval", what="the move")
                 ).pending_approval
        assert first is not None and (first.tool, first.arguments["path"]) == ("move_path", MOVE[0])
        scope_id, answer = await decide.grant_scope(h.client, store, run_id, "alice", tools=["apply_patch"],
                                                    paths=["src/**"], max_uses=len(SRC_FILES), ttl_seconds=3600)
        assert answer.startswith(f"granted {scope_id}: apply_patch on src/**")
        await decide.approve(h.client, run_id, first.approval_id, "alice", store=store)
        result = await h.result(run_id, timeout=60)  # about 6 s; a file the scope missed would wait here
    assert result.status == "completed", result.reason

    assert old_name_left(ws) == SRC_FILES and git_out(ws, "status", "--porcelain") == "", \
        "the user's checkout is as it was: the run worked on its branch"
    events = [r.event for r in store.audit(run_id)]
    tree = Path(next(e for e in events if isinstance(e, ChangeSetOpened)).workspace)
    assert old_name_left(tree) == [] and suite_passes(tree), "on the branch: renamed, moved, the tests pass"
    assert "calc_total" in (tree / "tests/test_naming.py").read_text(), "the constraint kept tests/ as it was"
    ran = [e for e in events if isinstance(e, ToolRan) and e.tool == "run_command"]
    assert len(ran) == 1 and ran[0].summary.startswith("exit code: 0"), "the tests pass after the refactor"
    requested = [e for e in events if isinstance(e, ApprovalRequested)]
    assert [e.approval_id for e in requested] == [first.approval_id], "a human was asked once"
    uses = [e for e in events if isinstance(e, ScopeUsed)]
    assert [u.path for u in uses] == PATCHED and {u.scope_id for u in uses} == {scope_id}
    assert [u.uses_left for u in uses] == list(range(len(SRC_FILES) - 1, -1, -1))

    branch = f"longrun/{run_id}"
    commits = git_out(ws, "log", "--reverse", "--format=%H%x00%B%x1e", f"main..{branch}").split("\x1e")[:-1]
    assert len(commits) == 1 + len(SRC_FILES), "one commit per edit: the move and fifteen patches"
    move_msg = commits[0].split("\0", 1)[1]
    assert move_msg.startswith(f"move_path: moved {MOVE[0]} -> {MOVE[1]}")
    assert f"Longrun-Approval: {first.approval_id}" in move_msg and "Longrun-Approver: alice" in move_msg
    assert all(f"Longrun-Approval: {scope_id}" in c and "Longrun-Approver: alice" in c for c in commits[1:])

    monkeypatch.setenv("LONGRUN_DATABASE_URL", db_url)
    assert cli.main(["diff", run_id]) == 0
    patch = capsys.readouterr().out
    touched = sorted({line.split(" b/", 1)[1] for line in patch.splitlines() if line.startswith("diff --git ")})
    assert touched == sorted(PATCHED), "the change set is exactly those files"
    assert f"rename from {MOVE[0]}\nrename to {MOVE[1]}" in patch
    assert "tests/" not in patch and "__pycache__" not in patch, "nothing the test command left behind"
    assert cli.main(["diff", run_id, "--stat"]) == 0
    assert f"{1 + len(SRC_FILES)} commit(s):" in capsys.readouterr().out

    report = [t for t in store.transcript(run_id) if t.role == "assistant"][-1].message.text()
    assert f"Change set: branch {branch}, {1 + len(SRC_FILES)} commit(s):" in report
    assert all(c.split("\0", 1)[0].strip()[:12] in report for c in commits), "the report names every commit"
    assert store.verify_chain(run_id).ok
    verdict = verify_decisions(store, run_id)
    assert verdict.ok, str(verdict)
    assert cli.main(["audit", run_id, "--verify"]) == 0, capsys.readouterr().err


@pytest.mark.slow
async def test_without_a_scope_every_file_waits_for_a_human(store: Store, temporal_client: Client, tmp_path: Path) -> None:
    ws = copy_sample("refactor", tmp_path)  # not a git repository: edited in place, as before change sets
    async with running_worker(temporal_client, store) as h:
        run_id = await h.start(refactor_spec(ws))
        first = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval", what="the move")
                 ).pending_approval
        await decide.approve(h.client, run_id, first.approval_id, "alice", store=store)
        second = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval"
                                   and s.pending_approval.approval_id != first.approval_id, what="the first patch")
                  ).pending_approval
        assert (second.tool, second.arguments["path"]) == ("apply_patch", PATCHED[0])
        await client_calls.control(h.client, run_id, "cancel")
        assert (await h.result(run_id)).status == "cancelled"
    assert (ws / MOVE[1]).exists() and old_name_left(ws) == sorted(PATCHED), "only the approved move happened"
    events = [r.event for r in store.audit(run_id)]
    assert len([e for e in events if isinstance(e, ApprovalRequested)]) == 2
    assert not [e for e in events if isinstance(e, ScopeUsed)]
    assert not [e for e in events if isinstance(e, ChangeSetOpened)]
    assert verify_decisions(store, run_id).ok
