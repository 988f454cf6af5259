"""Git change sets: a run on a git workspace works on its own branch in a worktree under
$LONGRUN_HOME, one commit per confirmed edit with the approval in its trailers, `longrun diff`
shows exactly that; a dirty workspace is refused with what to do; `in_place` and non-git
workspaces edit the folder itself. The git side runs the real `git` binary on real repositories;
the whole runs use real Postgres and the Temporal dev server."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from temporalio.client import Client

from longrun import cli
from longrun.auth.audit_check import verify_decisions
from longrun.cli.commands.common import CliError
from longrun.cli.commands.start import refuse_dirty_workspace
from longrun.client import decide
from longrun.models.audit import ChangeCommitted, ChangeSetOpened, ErrorRecorded
from longrun.models.spec import RunSpec
from longrun.store import Store
from longrun.workspace import Trailers, WorkspaceDirty, commit_effect, find_commit, is_git_workspace, open_change_set
from longrun.workspace.changeset import clear_stale_locks
from longrun.workspace.git import git
from tests.support.harness import running_worker
from tests.support.policy import PlanProvider

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git binary")


def make_repo(root: Path, files: dict[str, str] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in (files or {"hello.txt": "helo world\n", "src/app.py": "print('hi')\n"}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.name=t", "-c", "user.email=t@x", "commit", "-q", "-m", "start"]):
        subprocess.run(["git", *argv], cwd=root, check=True, capture_output=True)
    return root


def log(repo: Path, rev: str) -> list[str]:
    return git(repo, "log", "--format=%B%x1e", rev).split("\x1e")


# --- the git side, offline ------------------------------------------------------------------------


def test_a_change_set_is_a_branch_in_a_worktree_and_a_retry_finds_it(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    head = git(repo, "rev-parse", "HEAD")
    change = open_change_set(repo, "run-abc", tmp_path / "home" / "worktrees")
    assert (change.branch, change.base) == ("longrun/run-abc", head)
    assert Path(change.worktree) == (tmp_path / "home/worktrees/run-abc").resolve()
    assert (Path(change.workspace) / "hello.txt").read_text() == "helo world\n"
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "main", "the user's checkout stays on its branch"
    assert open_change_set(repo, "run-abc", tmp_path / "home" / "worktrees") == change
    shutil.rmtree(change.worktree)  # a worktree lost between two attempts is added back on the branch
    assert open_change_set(repo, "run-abc", tmp_path / "home" / "worktrees") == change


def test_a_workspace_in_a_subfolder_gets_the_same_subfolder_of_the_worktree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"samples/x/a.txt": "a\n", "b.txt": "b\n"})
    change = open_change_set(repo / "samples" / "x", "run-sub", tmp_path / "wt")
    assert Path(change.workspace) == Path(change.worktree) / "samples" / "x"
    assert (Path(change.workspace) / "a.txt").read_text() == "a\n"


def test_a_folder_the_repository_ignores_is_edited_in_place(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {".gitignore": "scratch/\n", "a.txt": "a\n"})
    (repo / "scratch" / "ws").mkdir(parents=True)
    assert is_git_workspace(repo) and is_git_workspace(repo / "scratch") is False
    assert is_git_workspace(repo / "scratch" / "ws") is False and is_git_workspace(tmp_path) is False
    refuse_dirty_workspace(repo / "scratch" / "ws")  # nothing to refuse: git does not track it


def test_a_dirty_workspace_is_refused_with_what_to_do(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "hello.txt").write_text("changed\n")
    (repo / "notes.txt").write_text("untracked\n")
    with pytest.raises(WorkspaceDirty) as caught:
        open_change_set(repo, "run-dirty", tmp_path / "wt")
    message = str(caught.value)
    assert "uncommitted changes (2: hello.txt, notes.txt)" in message
    assert "Commit or stash them" in message and "--in-place" in message
    assert not (tmp_path / "wt").exists(), "nothing was created"
    clean = make_repo(tmp_path / "clean")
    (clean / ".longrun" / "worktrees").mkdir(parents=True)  # $LONGRUN_HOME inside the repository
    (clean / ".longrun" / "stack.json").write_text("{}")
    change = open_change_set(clean, "run-home", clean / ".longrun" / "worktrees")
    assert Path(change.worktree).is_relative_to(clean / ".longrun"), "the stack's own files do not count"
    assert open_change_set(clean, "run-next", clean / ".longrun" / "worktrees").branch == "longrun/run-next", \
        "nor does another run's worktree"
    with pytest.raises(CliError, match="uncommitted changes .*hello.txt.*--in-place"):
        refuse_dirty_workspace(repo)
    refuse_dirty_workspace(tmp_path)  # not a git repository: nothing to refuse


def test_a_commit_has_trailers_only_the_named_paths_and_no_hook_runs(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    fired = tmp_path / "hook-fired"
    for hook in ("pre-commit", "commit-msg", "post-commit"):
        path = repo / ".git" / "hooks" / hook
        path.write_text(f"#!/bin/sh\necho {hook} >> {fired}\n")
        path.chmod(0o755)
    change = open_change_set(repo, "run-c", tmp_path / "wt")
    tree = Path(change.worktree)
    (tree / "hello.txt").write_text("hello world\n")
    (tree / "junk.pyc").write_text("left by a command\n")
    trailers = Trailers("run-c/t2/c0", "ab" * 32, "apr-1", "alice")
    sha = commit_effect(tree, ["hello.txt"], "apply_patch", "patched hello.txt", trailers)
    message = log(repo, sha)[0]
    assert message.startswith("apply_patch: patched hello.txt\n")
    for line in ("Longrun-Action: run-c/t2/c0", f"Longrun-Action-Hash: {'ab' * 32}", "Longrun-Approval: apr-1",
                 "Longrun-Approver: alice"):
        assert line in message
    assert git(tree, "show", "--name-only", "--format=", sha) == "hello.txt", "only the edit's path"
    assert not fired.exists(), "no hook of the user's repository ran"
    assert find_commit(tree, change.base, "run-c/t2/c0") == sha
    assert find_commit(tree, change.base, "run-c/t2/c1") is None
    empty = commit_effect(tree, ["docs"], "make_dir", "created directory docs", Trailers("run-c/t3/c0"))
    assert git(tree, "rev-parse", f"{empty}^") == sha, "an effect git cannot record still gets its commit"


def test_stale_locks_of_a_killed_git_are_cleared(tmp_path: Path) -> None:
    change = open_change_set(make_repo(tmp_path / "repo"), "run-l", tmp_path / "wt")
    tree = Path(change.worktree)
    gitdir = Path(git(tree, "rev-parse", "--absolute-git-dir"))
    (gitdir / "index.lock").write_text("")
    (tree / "hello.txt").write_text("x\n")
    with pytest.raises(Exception, match="index.lock"):
        commit_effect(tree, ["hello.txt"], "write_file", "w", Trailers("a"))
    assert clear_stale_locks(tree, change.branch) == [str(gitdir / "index.lock")]
    commit_effect(tree, ["hello.txt"], "write_file", "w", Trailers("a"))


# --- whole runs ---------------------------------------------------------------------------------

EDIT_PLAN = [
    [("set_next_action", {"next_action": "edit"})],
    [("apply_patch", {"path": "hello.txt", "old": "helo", "new": "hello"})],
    [("move_path", {"path": "src/app.py", "to": "src/app/main.py"})],
    [("set_next_action", {"next_action": "stop"})],
]


async def approve_all(h, store: Store, run_id: str, count: int) -> None:
    seen: set[str] = set()
    for _ in range(count):
        status = await h.wait_for(run_id, lambda s: s.status == "waiting_approval"
                                  and s.pending_approval.approval_id not in seen, what="an approval request")
        seen.add(status.pending_approval.approval_id)
        await decide.approve(h.client, run_id, status.pending_approval.approval_id, "alice", store=store)


@pytest.mark.slow
async def test_a_run_on_a_git_workspace_commits_each_edit_on_its_branch(
    store: Store, temporal_client: Client, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("LONGRUN_HOME", str(tmp_path / "home"))
    repo = make_repo(tmp_path / "repo")
    async with running_worker(temporal_client, store, provider=PlanProvider(plan=EDIT_PLAN)) as h:
        run_id = await h.start(RunSpec(objective="fix the greeting", workspace=str(repo), approvers=["alice"]))
        await approve_all(h, store, run_id, 2)
        result = await h.result(run_id, timeout=60)
    assert result.status == "completed", result.reason
    assert (repo / "hello.txt").read_text() == "helo world\n" and (repo / "src/app.py").exists(), \
        "the user's checkout is untouched"
    assert git(repo, "status", "--porcelain") == ""

    branch = f"longrun/{run_id}"
    events = [r.event for r in store.audit(run_id)]
    opened = [e for e in events if isinstance(e, ChangeSetOpened)]
    assert [(e.branch, e.base) for e in opened] == [(branch, git(repo, "rev-parse", "main"))]
    tree = Path(opened[0].worktree)
    assert tree.is_relative_to(tmp_path / "home" / "worktrees")
    assert (tree / "hello.txt").read_text() == "hello world\n" and (tree / "src/app/main.py").exists()
    messages = log(repo, f"main..{branch}")[:-1]
    assert [m.strip().splitlines()[0] for m in messages] == [
        "move_path: moved src/app.py -> src/app/main.py", "apply_patch: patched hello.txt: replaced 1 occurrence "
        "(1 line(s) -> 1 line(s)); sha256 " + messages[1].strip().splitlines()[0].rsplit(" ", 1)[1]]
    state = store.load_state(run_id)
    for message, approval in zip(reversed(messages), store.all_approvals(run_id, state), strict=True):
        assert f"Longrun-Approval: {approval.id}" in message and "Longrun-Approver: alice" in message
        assert f"Longrun-Action-Hash: {approval.action_hash}" in message
    committed = [e for e in events if isinstance(e, ChangeCommitted)]
    assert [(e.tool, e.how) for e in committed] == [("apply_patch", "ran"), ("move_path", "ran")]
    assert committed[1].paths == ["src/app.py", "src/app/main.py"]

    monkeypatch.setenv("LONGRUN_DATABASE_URL", db_url)
    assert cli.main(["diff", run_id]) == 0
    patch = capsys.readouterr().out
    assert "-helo world\n+hello world\n" in patch and "rename from src/app.py\nrename to src/app/main.py" in patch
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    subprocess.run(["git", "apply", "-"], cwd=clone, input=patch, text=True, check=True)
    subprocess.run(["git", "add", "-A"], cwd=clone, check=True)
    assert git(clone, "write-tree") == git(repo, "rev-parse", f"{branch}^{{tree}}"), "the patch is the change set"
    assert cli.main(["diff", run_id, "--stat"]) == 0
    stat = capsys.readouterr().out
    assert f"branch {branch} in {repo.resolve()}" in stat and "2 commit(s):" in stat and "2 files changed" in stat
    assert store.verify_chain(run_id).ok and verify_decisions(store, run_id).ok


@pytest.mark.slow
async def test_a_dirty_workspace_fails_the_run_audited_and_in_place_edits_the_folder(
    store: Store, temporal_client: Client, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("LONGRUN_HOME", str(tmp_path / "home"))
    dirty = make_repo(tmp_path / "dirty")
    (dirty / "hello.txt").write_text("mine, not committed\n")
    plain = make_repo(tmp_path / "plain")
    plan = [[("set_next_action", {"next_action": "edit"})],
            [("write_file", {"path": "new.txt", "content": "x\n"})],
            [("set_next_action", {"next_action": "stop"})]]
    async with running_worker(temporal_client, store, provider=PlanProvider(plan=plan)) as h:
        refused = await h.start(RunSpec(objective="edit", workspace=str(dirty), approvers=["alice"]))
        result = await h.result(refused, timeout=30)
        in_place = await h.start(RunSpec(objective="edit", workspace=str(plain), approvers=["alice"], in_place=True))
        await approve_all(h, store, in_place, 1)
        assert (await h.result(in_place, timeout=30)).status == "completed"
    assert result.status == "failed" and "uncommitted changes (1: hello.txt)" in result.reason
    assert "--in-place" in result.reason
    errors = [r.event for r in store.audit(refused) if isinstance(r.event, ErrorRecorded)]
    assert errors and errors[0].where == "open_change_set" and "Commit or stash" in errors[0].message
    assert (dirty / "hello.txt").read_text() == "mine, not committed\n" and not (tmp_path / "home/worktrees").exists()
    assert (plain / "new.txt").read_text() == "x\n", "in place: the folder itself"
    assert git(plain, "branch", "--list", "longrun/*") == ""
    monkeypatch.setenv("LONGRUN_DATABASE_URL", db_url)
    assert cli.main(["diff", in_place]) == 1
    assert "has no change set: it worked in the workspace folder itself" in capsys.readouterr().err
