"""Effect tools never write through a symlink (issue 24, finding 1).

A link inside the workspace (`docs/guide.md -> ../conftest.py`, or a linked directory
`docs/code -> ../src`) stays inside it, so `confine` lets it through; but scopes, the RUNS CODE
warning and the change set judge the path *as written*. So every effect tool refuses a path with
a symlink in any component, at the gate's check (before anyone is asked) and again when it runs,
and says to edit the link's target by its own path. Read tools keep following in-workspace links.
The whole-run test grants a scope on `docs/**` in a git workspace and shows nothing changed and
nothing is left uncommitted.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from longrun.client import decide
from longrun.client.approval_view import _diff
from longrun.errors import ToolError
from longrun.models.audit import ChangeSetOpened, GateVerdict, ScopeUsed
from longrun.models.spec import RunSpec
from longrun.store import Store
from longrun.tools import default_registry
from longrun.tools.autorun import runs_code_warnings
from longrun.tools.base import ToolContext
from longrun.tools.files import atomic_write
from longrun.tools.paths import check_write_path
from longrun.workspace import GitError, Trailers, commit_effect
from longrun.workspace.git import git
from tests.support.harness import running_worker
from tests.support.policy import PlanProvider

REG = default_registry()
CONFTEST = "import os\n"
AUTH = "def check(user):\n    return user.ok\n"


def linked_workspace(root: Path) -> Path:
    """The reviewer's setup: two file links and a directory link under docs/, all inside."""
    (root / "src").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "conftest.py").write_text(CONFTEST)
    (root / "src" / "auth.py").write_text(AUTH)
    (root / "docs" / "index.md").write_text("# docs\n")
    os.symlink("../conftest.py", root / "docs" / "guide.md")
    os.symlink("../src/auth.py", root / "docs" / "auth-notes.md")
    os.symlink("../src", root / "docs" / "code")
    return root


def untouched(ws: Path) -> None:
    assert (ws / "conftest.py").read_text() == CONFTEST
    assert (ws / "src" / "auth.py").read_text() == AUTH
    assert sorted(p.name for p in (ws / "src").iterdir()) == ["auth.py"], "nothing created through docs/code"
    assert os.readlink(ws / "docs" / "guide.md") == "../conftest.py", "the link itself is left alone"


def _diff_of(path: str, old: str, new: str) -> str:
    return f"--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-{old}\n+{new}\n"


THROUGH_LINKS: list[tuple[str, dict[str, Any]]] = [
    ("write_file", {"path": "docs/guide.md", "content": "import evil\n"}),
    ("write_file", {"path": "docs/code/auth.py", "content": "def check(user):\n    return True\n"}),
    ("write_file", {"path": "docs/code/new.py", "content": "x = 1\n"}),
    ("apply_patch", {"path": "docs/auth-notes.md", "old": "user.ok", "new": "True"}),
    ("apply_patch", {"path": "docs/code/auth.py", "edits": [{"old": "user.ok", "new": "True"}]}),
    ("apply_patch", {"diff": _diff_of("docs/auth-notes.md", "def check(user):", "def check(_):")}),
    ("apply_patch", {"diff": _diff_of("docs/index.md", "# docs", "# Docs")
                     + _diff_of("docs/guide.md", "import os", "import evil")}),
    ("move_path", {"path": "docs/guide.md", "to": "docs/moved.md"}),
    ("move_path", {"path": "docs/index.md", "to": "docs/code/index.md"}),
    ("delete_path", {"path": "docs/code/auth.py"}),
    ("delete_path", {"path": "docs/guide.md"}),
    ("make_dir", {"path": "docs/code/pkg"}),
]


@pytest.mark.parametrize(("name", "args"), THROUGH_LINKS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(THROUGH_LINKS)])
def test_every_effect_tool_refuses_a_symlink_in_its_path(tmp_path: Path, name: str, args: dict[str, Any]) -> None:
    ws = linked_workspace(tmp_path / "ws")
    ctx = ToolContext(run_id="r", workspace=ws)
    tool = REG.get(name)
    assert tool.check is not None and tool.run is not None
    REG.validate_arguments(name, args)
    refusal = tool.check(args, ctx)
    assert refusal is not None and "symlink" in refusal, refusal
    assert "by its own path" in refusal, "the refusal says what to do"
    with pytest.raises(ToolError, match="symlink"):
        tool.run(args, ctx)
    if tool.fingerprint is not None:
        with pytest.raises(ToolError, match="symlink"):
            tool.fingerprint(args, ctx)
    untouched(ws)
    assert (ws / "docs" / "index.md").read_text() == "# docs\n"


def test_a_linked_directory_at_the_top_is_refused_too(tmp_path: Path) -> None:
    """`docs -> src`: the first component is the link."""
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "auth.py").write_text(AUTH)
    os.symlink("src", ws / "docs")
    ctx = ToolContext(run_id="r", workspace=ws)
    refusal = REG.get("write_file").check({"path": "docs/auth.py", "content": "x"}, ctx)  # type: ignore[misc]
    assert refusal and "'docs'" in refusal and "'src/auth.py'" in refusal, refusal
    assert (ws / "src" / "auth.py").read_text() == AUTH


def test_the_target_by_its_own_path_is_allowed_and_reads_still_follow_links(tmp_path: Path) -> None:
    ws = linked_workspace(tmp_path / "ws")
    ctx = ToolContext(run_id="r", workspace=ws)
    assert REG.get("write_file").check({"path": "src/auth.py", "content": "x"}, ctx) is None  # type: ignore[misc]
    read = REG.get("read_file").run({"path": "docs/auth-notes.md"}, ctx)  # type: ignore[misc]
    assert "return user.ok" in read.text
    found = REG.get("grep").run({"pattern": "user.ok", "path": "docs"}, ctx)  # type: ignore[misc]
    assert "docs/auth-notes.md:2:" in found.text


def test_absolute_paths_are_refused_for_effects(tmp_path: Path) -> None:
    """An absolute path is judged by scopes and the change set as written too; effects take
    workspace-relative paths only."""
    ws = linked_workspace(tmp_path / "ws")
    ctx = ToolContext(run_id="r", workspace=ws)
    refusal = REG.get("write_file").check({"path": str(ws / "conftest.py"), "content": "x"}, ctx)  # type: ignore[misc]
    assert refusal and "relative to the workspace" in refusal


def test_the_approver_is_never_shown_one_file_while_another_changes(tmp_path: Path) -> None:
    """`longrun show` of such a call says the gate refuses it; it shows no diff of the link."""
    ws = linked_workspace(tmp_path / "ws")
    for name, args in THROUGH_LINKS:
        diff, note = _diff(name, args, ws)
        assert diff is None and note and "symlink" in note, (name, args, diff, note)


# --- a whole run: a scope on docs/**, a git workspace -------------------------------------------


def make_linked_repo(root: Path) -> Path:
    linked_workspace(root)
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.name=t", "-c", "user.email=t@x", "commit", "-q", "-m", "links ship in git"]):
        subprocess.run(["git", *argv], cwd=root, check=True, capture_output=True)
    return root


SCOPED_PLAN = [
    [("set_next_action", {"next_action": "edit"})],
    [("write_file", {"path": "docs/index.md", "content": "# Docs\n"})],  # a human approves; the scope is granted
    [("write_file", {"path": "docs/guide.md", "content": "import evil\n"})],
    [("apply_patch", {"path": "docs/auth-notes.md", "old": "user.ok", "new": "True"})],
    [("write_file", {"path": "docs/code/auth.py", "content": "def check(user):\n    return True\n"})],
    [("write_file", {"path": "docs/notes.md", "content": "covered\n"})],  # the scope covers it: no one is asked
    [("set_next_action", {"next_action": "stop"})],
]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="needs the git binary")
@pytest.mark.parametrize("in_place", [False, True], ids=["change-set", "in-place"])
async def test_a_scope_on_docs_gets_no_edit_through_a_link_and_leaves_nothing_uncommitted(
    store: Store, temporal_client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_place: bool,
) -> None:
    monkeypatch.setenv("LONGRUN_HOME", str(tmp_path / "home"))
    repo = make_linked_repo(tmp_path / "repo")
    async with running_worker(temporal_client, store, provider=PlanProvider(plan=SCOPED_PLAN)) as h:
        run_id = await h.start(RunSpec(objective="Tidy the docs.", workspace=str(repo), approvers=["alice"],
                                       in_place=in_place))
        first = (await h.wait_for(run_id, lambda s: s.status == "waiting_approval")).pending_approval
        assert first.arguments["path"] == "docs/index.md"
        await decide.grant_scope(h.client, store, run_id, "alice", tools=["write_file", "apply_patch"],
                                 paths=["docs/**"], max_uses=10, ttl_seconds=3600)
        await decide.approve(h.client, run_id, first.approval_id, "alice", store=store)
        result = await h.result(run_id, timeout=90)
    assert result.status == "completed", result.reason

    events = [r.event for r in store.audit(run_id)]
    opened = [e for e in events if isinstance(e, ChangeSetOpened)]
    tree = repo if in_place else Path(opened[0].worktree)
    assert bool(opened) is not in_place
    untouched(tree)
    untouched(repo)
    assert (tree / "docs" / "notes.md").read_text() == "covered\n", "the scope still covers real files"
    denied = [e for e in events if isinstance(e, GateVerdict) and e.verdict == "deny"]
    assert len(denied) == 3 and all("symlink" in e.reason for e in denied), [e.reason for e in denied]
    assert [u.path for u in events if isinstance(u, ScopeUsed)] == ["docs/notes.md"], "no use was spent on a link"
    if in_place:  # the user's own tree: only the two real edits, nothing through a link
        assert sorted(git(repo, "status", "--porcelain").splitlines()) == [" M docs/index.md", "?? docs/notes.md"]
        return
    assert git(tree, "status", "--porcelain") == "", "nothing is left uncommitted in the worktree"
    assert git(repo, "status", "--porcelain") == ""
    assert git(tree, "diff", "--name-only", f"main..longrun/{run_id}").split() == ["docs/index.md", "docs/notes.md"]


def test_runs_code_warns_for_every_file_a_call_changes() -> None:
    """The RUNS CODE warning reads a diff's files and a move's destination, not only `path`."""
    diff = _diff_of("docs/index.md", "# docs", "# Docs") + _diff_of("conftest.py", "import os", "import evil")
    assert [p for p, _ in runs_code_warnings({"diff": diff})] == ["conftest.py"]
    assert [p for p, _ in runs_code_warnings({"path": "src/helpers.py", "to": "tests/conftest.py"})] == [
        "tests/conftest.py"]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs the git binary")
def test_the_change_set_refuses_to_commit_a_path_through_a_link(tmp_path: Path) -> None:
    """Its own guard: a commit of `docs/guide.md` would record the unchanged link and leave the
    changed conftest.py uncommitted."""
    repo = make_linked_repo(tmp_path / "repo")
    (repo / "conftest.py").write_text("import evil\n")  # as a write through the link would have
    with pytest.raises(GitError, match="'docs/guide.md' is a symlink"):
        commit_effect(repo, ["docs/guide.md"], "write_file", "wrote docs/guide.md", Trailers("r/t1/c0"))
    with pytest.raises(GitError, match="'docs/code' is a symlink"):
        commit_effect(repo, ["docs/code/auth.py"], "write_file", "wrote docs/code/auth.py", Trailers("r/t1/c0"))
    assert git(repo, "rev-list", "--count", "HEAD") == "1", "nothing was committed"


def test_a_link_swapped_in_after_the_check_fails_the_write(tmp_path: Path) -> None:
    """The write itself opens each directory with O_NOFOLLOW from `/`: a directory replaced by a
    link between the gate's check and the write is not followed."""
    ws = linked_workspace(tmp_path / "ws")
    (ws / "notes").mkdir()
    checked = check_write_path(ws, "notes/auth.py")
    (ws / "notes").rmdir()
    os.symlink("src", ws / "notes")  # what a command could do between the check and the write
    with pytest.raises(OSError, match="symlink"):
        atomic_write(checked, b"def check(user):\n    return True\n")
    untouched(ws)
