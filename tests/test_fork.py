"""`longrun fork` (issue 29) on the real stack: real Postgres, the Temporal dev server, real git.

A run on a git workspace patches a file and moves another (both approved); a fork after its second
turn continues on its own branch from the patch's commit, asks again for the move (approvals are
not carried), finishes, and both runs verify; a fork of that fork starts from the fork's move; the
family's evidence bundle (and the fork of the fork's alone) verifies.
A version with an effect in flight is refused with what to do; an in-place run is forked only into
another folder; `runs --tree` shows the family.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from temporalio.client import Client

from longrun.auth.audit_check import verify_decisions
from longrun.client.fork import ForkRequest, fork_run
from longrun.models.audit import ChangeSetOpened, ForkedFrom, RunForked
from longrun.models.spec import RunSpec
from longrun.store import Store
from longrun.workspace.git import git
from tests.support.cli_stack import LONGRUN
from tests.support.harness import running_worker
from tests.support.policy import PlanProvider
from tests.test_git_changeset import EDIT_PLAN, approve_all, make_repo

pytestmark = [pytest.mark.skipif(shutil.which("git") is None, reason="needs the git binary"), pytest.mark.slow]


def run_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([LONGRUN, *args], env=env, capture_output=True, text=True, timeout=60)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def cli_env(tmp_path: Path, db_url: str, temporal_client: Client, task_queue: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY",)}
    env.update(LONGRUN_HOME=str(tmp_path / "home"), LONGRUN_DATABASE_URL=db_url, LONGRUN_TASK_QUEUE=task_queue,
               TEMPORAL_ADDRESS=temporal_client.service_client.config.target_host)
    return env


def opened(store: Store, run_id: str) -> ChangeSetOpened:
    events = [r.event for r in store.audit(run_id) if isinstance(r.event, ChangeSetOpened)]
    assert len(events) == 1
    return events[0]


def subjects(repo: Path, rev: str) -> list[str]:
    return git(repo, "log", "--reverse", "--format=%s", rev).splitlines()


@pytest.mark.timeout(240)
async def test_a_fork_continues_on_its_own_branch_asks_again_and_both_runs_verify(
    store: Store, temporal_client: Client, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LONGRUN_HOME", str(tmp_path / "home"))
    repo = make_repo(tmp_path / "repo")
    provider = PlanProvider(plan=EDIT_PLAN)
    async with running_worker(temporal_client, store, provider=provider) as h:
        env = cli_env(tmp_path, db_url, temporal_client, h.task_queue)
        original = await h.start(RunSpec(objective="fix the greeting", workspace=str(repo), approvers=["alice"]))
        await approve_all(h, store, original, 2)
        assert (await h.result(original, timeout=60)).status == "completed"
        branch = f"longrun/{original}"
        original_tip = git(repo, "rev-parse", branch)
        first = subjects(repo, f"main..{branch}")
        assert [s.split(":")[0] for s in first] == ["apply_patch", "move_path"]
        patch_commit = git(repo, "rev-parse", f"{branch}~1")
        requests_before = len(provider.requests)

        # after two model turns: the patch is made and committed, the move not yet asked for
        done = run_cli(env, "fork", original, "--at-turn", "2", "--json")
        assert done.returncode == 0, done.stderr
        fork = json.loads(done.stdout)["run_id"]
        first_fork_request = await h.wait_for(fork, lambda s: s.status == "waiting_approval", what="the fork's ask")
        assert first_fork_request.pending_approval is not None
        assert first_fork_request.pending_approval.tool == "move_path", "the original's approval was not carried"
        # the fork's model saw what the original's saw before its third answer, and nothing later
        fork_first = provider.requests[requests_before]
        original_third = provider.requests[2]
        assert fork_first.messages[:-1] == original_third.messages[:-1]
        assert len(fork_first.messages) == len(original_third.messages)
        await approve_all(h, store, fork, 1)
        assert (await h.result(fork, timeout=60)).status == "completed"

        assert git(repo, "rev-parse", branch) == original_tip, "the original branch is untouched"
        fork_set = opened(store, fork)
        assert fork_set.branch == f"longrun/{fork}" and fork_set.base == patch_commit
        assert [s.split(":")[0] for s in subjects(repo, f"{patch_commit}..longrun/{fork}")] == ["move_path"]
        tree = Path(fork_set.worktree)
        assert (tree / "hello.txt").read_text() == "hello world\n" and (tree / "src/app/main.py").exists()

        # lineage, both ways, audited
        point = store.lineage(fork)
        assert point is not None and point.parent_run_id == original and point.parent_commit == patch_commit
        assert [f.run_id for f in store.forks(original)] == [fork]
        assert any(isinstance(r.event, ForkedFrom) and r.event.parent_run_id == original for r in store.audit(fork))
        assert any(isinstance(r.event, RunForked) and r.event.fork_run_id == fork for r in store.audit(original))
        v1 = store.state_history(fork)[0].state
        assert v1.approvals == [] and v1.scopes == [] and v1.effects == [] and v1.closed.count == 0
        assert "1 effect(s) had happened there" in v1.notes[-1]
        # the transcript is shared by reference: the fork stored only its own entries
        own = [e.seq for e in store.transcript(fork) if e.seq > point.parent_through_seq]
        assert own and min(own) == point.parent_through_seq + 1

        # a fork of the fork, after its move: its branch starts at the fork's move commit
        fork_tip = git(repo, "rev-parse", f"longrun/{fork}")
        grandchild = await fork_run(temporal_client, store, ForkRequest(run_id=fork, at_turn=3),
                                    task_queue=h.task_queue, actor="tester")
        assert (await h.result(grandchild, timeout=60)).status == "completed"
        assert opened(store, grandchild).base == fork_tip
        assert git(repo, "rev-parse", f"longrun/{fork}") == fork_tip

        for run in (original, fork, grandchild):
            assert store.verify_chain(run).ok, store.verify_chain(run)
            assert verify_decisions(store, run).ok
            checked = run_cli(env, "audit", run, "--verify")
            assert checked.returncode == 0, checked.stdout + checked.stderr
        shown = run_cli(env, "status", fork)
        assert shown.returncode == 0 and f"forked from {original} at state v" in shown.stdout
        assert f"forks: {grandchild}" in shown.stdout

        listing = run_cli(env, "runs", "--tree", "--limit", "50")
        assert listing.returncode == 0, listing.stderr
        lines = listing.stdout.splitlines()
        at = {run: next(i for i, line in enumerate(lines) if run in line) for run in (original, fork, grandchild)}
        assert at[original] < at[fork] < at[grandchild]
        indent = {run: len(lines[i]) - len(lines[i].lstrip(" │├└─")) for run, i in at.items()}
        assert indent[original] < indent[fork] < indent[grandchild]
        assert "fork at v" in lines[at[fork]]

        # the evidence: the original's --family bundle holds both forks and verifies (signed approvals
        # and all); the grandchild's own bundle carries the entries it reads from both ancestors
        family = tmp_path / "family.zip"
        exported = run_cli(env, "export", original, "-o", str(family), "--family", "--json")
        assert exported.returncode == 0, exported.stderr
        assert json.loads(exported.stdout)["runs"] == [original, fork, grandchild]
        for bundle, runs in ((family, [original, fork, grandchild]), (tmp_path / "grandchild.zip", [grandchild])):
            if bundle != family:
                assert run_cli(env, "export", grandchild, "-o", str(bundle)).returncode == 0
            checked = run_cli(env, "verify-bundle", str(bundle), "--json")
            assert checked.returncode == 0, checked.stdout + checked.stderr
            report = json.loads(checked.stdout)
            assert report["runs"] == runs and report["checked"]["lineage rows"] >= 2, report


@pytest.mark.timeout(180)
async def test_a_version_with_an_effect_in_flight_and_an_in_place_run_are_refused_with_what_to_do(
    store: Store, temporal_client: Client, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LONGRUN_HOME", str(tmp_path / "home"))
    repo = make_repo(tmp_path / "repo")
    plain = make_repo(tmp_path / "plain")
    plan = [[("set_next_action", {"next_action": "edit"})],
            [("write_file", {"path": "new.txt", "content": "x\n"})],
            [("set_next_action", {"next_action": "stop"})]]
    async with running_worker(temporal_client, store, provider=PlanProvider(plan=plan)) as h:
        env = cli_env(tmp_path, db_url, temporal_client, h.task_queue)
        run = await h.start(RunSpec(objective="add a file", workspace=str(repo), approvers=["alice"]))
        await approve_all(h, store, run, 1)
        assert (await h.result(run, timeout=60)).status == "completed"
        history = store.state_history(run)
        in_flight = next(v.version for v in history if v.state.unknown_effects())
        approved = next(v.version for v in history if v.state.approvals)
        refused = run_cli(env, "fork", run, "--at", str(in_flight))
        assert refused.returncode == 1
        assert "not known yet" in refused.stderr and f"longrun resume {run}" in refused.stderr
        assert f"fork at v{in_flight + 1} or later" in refused.stderr and "Nothing was created" in refused.stderr
        assert store.forks(run) == [] and git(repo, "branch", "--list", "longrun/*").count("longrun/") == 1

        # the version where the write was approved but not yet done: the fork asks again
        again = await fork_run(temporal_client, store, ForkRequest(run_id=run, at_version=approved),
                               task_queue=h.task_queue, actor="tester")
        asked = await h.wait_for(again, lambda s: s.status == "waiting_approval", what="the fork's own approval")
        assert asked.pending_approval is not None and asked.pending_approval.tool == "write_file"
        await h.client.get_workflow_handle(again).cancel()

        in_place = await h.start(RunSpec(objective="add a file", workspace=str(plain), approvers=["alice"],
                                         in_place=True))
        await approve_all(h, store, in_place, 1)
        assert (await h.result(in_place, timeout=60)).status == "completed"
        no_folder = run_cli(env, "fork", in_place, "--at", "2")
        assert no_folder.returncode == 1 and "edited its workspace folder" in no_folder.stderr
        assert "--workspace DIR" in no_folder.stderr and "git worktree add" in no_folder.stderr
        same = run_cli(env, "fork", in_place, "--at", "2", "--workspace", str(plain))
        assert same.returncode == 1 and "never shares its parent's folder" in same.stderr
        assert store.forks(in_place) == []
        copy = tmp_path / "copy"
        shutil.copytree(plain, copy)
        ok = run_cli(env, "fork", in_place, "--at", "2", "--workspace", str(copy), "--say", "check new.txt again")
        assert ok.returncode == 0, ok.stderr
        forked = ok.stdout.strip()
        assert store.get_run(forked).spec.workspace == str(copy.resolve())
        point = store.lineage(forked)
        assert point is not None
        said = store.transcript(forked, after_seq=point.parent_through_seq, through_seq=point.parent_through_seq + 1)
        assert said[0].role == "user" and said[0].message.content[0].text == "check new.txt again"  # type: ignore[union-attr]
        await h.client.get_workflow_handle(forked).cancel()
