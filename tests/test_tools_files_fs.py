"""glob, move_path, delete_path, make_dir and apply_patch's several-edit and unified-diff shapes:
what they do to real files, what they refuse (leaving the files as they were), how reconcile
settles each after a crash, which paths a scope must cover, and the approver's diff."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from longrun.auth.scopes import constraints_sha256, covering_scope
from longrun.client.approval_view import _diff
from longrun.errors import ToolError, WorkspaceEscape
from longrun.models.state import Scope, TaskState
from longrun.tools import default_registry
from longrun.tools.base import ToolContext
from longrun.tools.fs_tools import TRASH_PREFIX, _trash

REG = default_registry()
NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "a.py").write_text("one = 1\ntwo = 2\nthree = 3\n")
    (root / "src" / "pkg" / "b.py").write_text("x = 'b'\n")
    (root / "README.md").write_text("# readme\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    return root


def ctx(ws: Path, before: str | None = None, action_id: str = "run/t1/c0") -> ToolContext:
    return ToolContext(run_id="run", workspace=ws, action_id=action_id, before=before)


def call(name: str, args: dict[str, Any], ws: Path) -> tuple[str, str | None]:
    """Check, fingerprint and run, as the activities do; (output, fingerprint before)."""
    tool = REG.get(name)
    REG.validate_arguments(name, args)
    refusal = tool.check(args, ctx(ws)) if tool.check else None
    if refusal:
        raise ToolError(refusal)
    before = tool.fingerprint(args, ctx(ws)) if tool.fingerprint else None
    assert tool.run is not None
    return tool.run(args, ctx(ws)).text, before


def reconcile(name: str, args: dict[str, Any], ws: Path, before: str | None) -> str:
    tool = REG.get(name)
    assert tool.reconcile is not None
    return tool.reconcile(args, ctx(ws, before)).status


# --- glob ---------------------------------------------------------------------------------------


def test_glob_lists_paths_with_sizes_by_the_scopes_globs(ws: Path) -> None:
    out = REG.get("glob").run({"pattern": "src/**/*.py"}, ctx(ws)).text  # type: ignore[misc]
    assert out.splitlines() == ["        26  src/pkg/a.py", "         8  src/pkg/b.py"]
    top = REG.get("glob").run({"pattern": "*"}, ctx(ws)).text  # type: ignore[misc]
    assert top.splitlines() == ["         9  README.md", "       dir  src/"]
    assert ".git" not in REG.get("glob").run({"pattern": "**"}, ctx(ws)).text  # type: ignore[misc]


def test_glob_skips_links_out_of_the_workspace_and_refuses_a_path_outside(ws: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("s")
    os.symlink(tmp_path / "secret.txt", ws / "src" / "leak.txt")
    out = REG.get("glob").run({"pattern": "src/*"}, ctx(ws)).text  # type: ignore[misc]
    assert "leak.txt" not in out and "[skipped 1 symlink(s) pointing outside the workspace]" in out
    assert REG.get("glob").check({"pattern": "*", "path": ".."}, ctx(ws))  # type: ignore[misc]
    with pytest.raises(WorkspaceEscape):
        REG.get("glob").run({"pattern": "*", "path": "../"}, ctx(ws))  # type: ignore[misc]


# --- move_path ----------------------------------------------------------------------------------


def test_move_path_moves_a_file_into_a_new_folder_and_reconciles(ws: Path) -> None:
    args = {"path": "src/pkg/b.py", "to": "src/pkg/sub/c.py"}
    text, before = call("move_path", args, ws)
    assert text == "moved src/pkg/b.py -> src/pkg/sub/c.py"
    assert not (ws / "src/pkg/b.py").exists() and (ws / "src/pkg/sub/c.py").read_text() == "x = 'b'\n"
    assert reconcile("move_path", args, ws, before) == "confirmed"
    (ws / "src/pkg/sub/c.py").rename(ws / "src/pkg/b.py")  # as if the move never happened
    assert reconcile("move_path", args, ws, before) == "none"
    (ws / "src/pkg/sub/c.py").write_text("other")  # both there: nobody can tell
    assert reconcile("move_path", args, ws, before) == "undecidable"


def test_move_path_never_overwrites_and_stays_out_of_git_and_parents(ws: Path) -> None:
    with pytest.raises(ToolError, match="exists already; move_path never overwrites"):
        call("move_path", {"path": "src/pkg/a.py", "to": "src/pkg/b.py"}, ws)
    with pytest.raises(ToolError, match=".git"):
        call("move_path", {"path": "src/pkg/a.py", "to": ".git/hooks/pre-commit"}, ws)
    with pytest.raises(ToolError, match="'..'"):
        call("move_path", {"path": "src/pkg/a.py", "to": "../a.py"}, ws)
    with pytest.raises(ToolError, match="into itself"):
        call("move_path", {"path": "src", "to": "src/inner"}, ws)
    assert (ws / "src/pkg/a.py").read_text().startswith("one = 1") and (ws / "src/pkg/b.py").exists()


# --- delete_path and make_dir --------------------------------------------------------------------


def test_delete_path_needs_recursive_for_a_full_folder_and_finishes_a_cut_removal(ws: Path) -> None:
    with pytest.raises(ToolError, match="recursive=true"):
        call("delete_path", {"path": "src/pkg"}, ws)
    args = {"path": "src/pkg", "recursive": True}
    before = REG.get("delete_path").fingerprint(args, ctx(ws))  # type: ignore[misc]
    assert before is not None and before.startswith("tree:")
    assert reconcile("delete_path", args, ws, before) == "none"
    # a crash after the rename aside and during the removal: the path is gone, the trash is half there
    trash = _trash(ws / "src" / "pkg", "run/t1/c0")
    assert trash.name.startswith(TRASH_PREFIX)
    (ws / "src" / "pkg").rename(trash)
    (trash / "a.py").unlink()
    assert reconcile("delete_path", args, ws, before) == "confirmed" and not trash.exists()


def test_delete_path_of_a_file_and_make_dir(ws: Path) -> None:
    text, before = call("delete_path", {"path": "README.md"}, ws)
    assert text == "deleted README.md" and not (ws / "README.md").exists()
    assert reconcile("delete_path", {"path": "README.md"}, ws, before) == "confirmed"
    text, before = call("make_dir", {"path": "docs/api"}, ws)
    assert text == "created directory docs/api" and (ws / "docs/api").is_dir() and before == "missing"
    assert reconcile("make_dir", {"path": "docs/api"}, ws, before) == "confirmed"
    with pytest.raises(ToolError, match="exists already"):
        call("make_dir", {"path": "docs/api"}, ws)
    (ws / "docs/api").rmdir()
    assert reconcile("make_dir", {"path": "docs/api"}, ws, before) == "none"


# --- apply_patch: several edits in one file -------------------------------------------------------


def test_several_edits_apply_together_or_not_at_all(ws: Path) -> None:
    path = ws / "src/pkg/a.py"
    edits = {"path": "src/pkg/a.py", "edits": [{"old": "one = 1", "new": "one = 10"}, {"old": "three = 3", "new": "three = 30"}]}
    text, before = call("apply_patch", edits, ws)
    assert text.splitlines()[0] == "patched src/pkg/a.py: 2 edit(s) applied"
    assert path.read_text() == "one = 10\ntwo = 2\nthree = 30\n"
    assert reconcile("apply_patch", edits, ws, before) == "confirmed"
    assert reconcile("apply_patch", edits, ws, None) == "undecidable", "'one = 1' is inside 'one = 10': no proof"
    upper = {"path": "src/pkg/a.py", "edits": [{"old": "two = 2", "new": "TWO = 2"}]}
    assert reconcile("apply_patch", upper, ws, None) == "none", "the old text is there, the new is not"
    call("apply_patch", upper, ws)
    assert reconcile("apply_patch", upper, ws, None) == "confirmed", "the new text is there, the old is not"
    bad = {"path": "src/pkg/a.py", "edits": [{"old": "TWO = 2", "new": "two = 20"}, {"old": "nine", "new": "9"}]}
    with pytest.raises(ToolError, match="the text to replace of edit 2 occurs 0 times"):
        call("apply_patch", bad, ws)
    assert path.read_text() == "one = 10\nTWO = 2\nthree = 30\n", "the first edit did not land alone"
    overlap = {"path": "src/pkg/a.py", "edits": [{"old": "TWO = 2\nthree", "new": "x"}, {"old": "2\nthree = 30", "new": "y"}]}
    with pytest.raises(ToolError, match="overlap"):
        call("apply_patch", overlap, ws)


def test_mixed_shapes_are_refused_with_what_to_send(ws: Path) -> None:
    tool = REG.get("apply_patch")
    assert tool.check is not None
    refusal = tool.check({"path": "src/pkg/a.py", "old": "one", "new": "1", "diff": "--- a/x"}, ctx(ws))
    assert refusal and refusal.startswith("give exactly one of")
    assert tool.check({"path": "src/pkg/a.py"}, ctx(ws)), "no shape at all"


# --- apply_patch: a unified diff ------------------------------------------------------------------

DIFF = """\
diff --git a/src/pkg/a.py b/src/pkg/a.py
--- a/src/pkg/a.py
+++ b/src/pkg/a.py
@@ -1,3 +1,3 @@
 one = 1
-two = 2
+two = 22
 three = 3
--- /dev/null
+++ b/src/pkg/new.py
@@ -0,0 +1 @@
+new = True
\\ No newline at end of file
--- a/src/pkg/b.py
+++ /dev/null
@@ -1 +0,0 @@
-x = 'b'
"""


def test_a_diff_edits_creates_and_deletes_files_and_reconciles_exactly(ws: Path) -> None:
    args = {"diff": DIFF}
    assert REG.get("apply_patch").changed_paths(args) == ["src/pkg/a.py", "src/pkg/new.py", "src/pkg/b.py"]
    text, before = call("apply_patch", args, ws)
    assert before is not None and before.startswith("files:")
    assert text.splitlines()[0] == "applied the diff to 3 file(s)"
    assert (ws / "src/pkg/a.py").read_text() == "one = 1\ntwo = 22\nthree = 3\n"
    assert (ws / "src/pkg/new.py").read_text() == "new = True", "git's marker: no newline at the end"
    assert not (ws / "src/pkg/b.py").exists()
    assert reconcile("apply_patch", args, ws, before) == "confirmed"
    assert reconcile("apply_patch", args, ws, None) == "confirmed", "it applies backwards only"
    (ws / "src/pkg/b.py").write_text("x = 'b'\n")  # a crash between two files: b.py not yet deleted
    assert reconcile("apply_patch", args, ws, before) == "undecidable"


def test_a_diff_that_does_not_apply_changes_nothing(ws: Path) -> None:
    stale = DIFF.replace("-two = 2", "-two = 3")
    with pytest.raises(ToolError, match=r"hunk 1 of 'src/pkg/a.py' \(at line 1\) does not match the file now"):
        call("apply_patch", {"diff": stale}, ws)
    assert (ws / "src/pkg/b.py").exists() and not (ws / "src/pkg/new.py").exists()
    assert reconcile("apply_patch", {"diff": DIFF}, ws, None) == "none", "it still applies forwards only"
    rename = "diff --git a/x b/y\nsimilarity index 100%\nrename from x\nrename to y\n"
    with pytest.raises(ToolError, match="use move_path"):
        call("apply_patch", {"diff": rename}, ws)
    with pytest.raises(ToolError, match=".git"):
        call("apply_patch", {"diff": "--- a/.git/config\n+++ b/.git/config\n@@ -1 +1 @@\n-[core]\n+[x]\n"}, ws)


def test_a_hunk_is_found_when_the_file_moved_on_a_little(ws: Path) -> None:
    (ws / "src/pkg/a.py").write_text("# header\n\none = 1\ntwo = 2\nthree = 3\n")
    text, _ = call("apply_patch", {"diff": DIFF.split("--- /dev/null")[0]}, ws)
    assert (ws / "src/pkg/a.py").read_text() == "# header\n\none = 1\ntwo = 22\nthree = 3\n", text


# --- scopes: every path the call changes -----------------------------------------------------------


def _state(paths: list[str], tools: list[str]) -> TaskState:
    scope = Scope(id="scp-0123456789abcdef", tools=tools, paths=paths, max_uses=5, granted_by="alice", key_id="k",
                  granted_at=NOW, expires_at=NOW + timedelta(hours=1), constraints_sha256=constraints_sha256([]))
    return TaskState(run_id="r", state_version=1, objective="o", updated_at=NOW, scopes=[scope])


def test_a_scope_must_cover_both_ends_of_a_move_and_every_file_of_a_diff() -> None:
    state = _state(["src/**"], ["move_path", "apply_patch"])
    move = REG.get("move_path")
    inside = {"path": "src/a.py", "to": "src/sub/a.py"}
    out = {"path": "src/a.py", "to": "lib/a.py"}
    assert covering_scope(state, "move_path", inside, NOW, paths=move.changed_paths(inside))[0] is not None
    assert covering_scope(state, "move_path", out, NOW, paths=move.changed_paths(out))[0] is None
    patch = REG.get("apply_patch")
    diff = {"diff": DIFF.replace("src/pkg/b.py", "setup.py")}
    assert covering_scope(state, "apply_patch", diff, NOW, paths=patch.changed_paths(diff))[0] is None
    assert covering_scope(state, "apply_patch", {"diff": DIFF}, NOW, paths=patch.changed_paths({"diff": DIFF}))[0]


# --- what the approver sees --------------------------------------------------------------------------


def test_the_approval_view_diffs_every_shape(ws: Path) -> None:
    diff, note = _diff("apply_patch", {"diff": DIFF}, ws)
    assert note == "3 files" and diff is not None
    assert "+two = 22" in diff and "+++ b/src/pkg/new.py" in diff and "--- /dev/null" in diff
    assert "--- a/src/pkg/b.py\n+++ /dev/null" in diff
    diff, note = _diff("apply_patch", {"path": "src/pkg/a.py", "edits": [{"old": "one = 1", "new": "uno"}]}, ws)
    assert note is None and diff is not None and "-one = 1\n+uno\n" in diff
    diff, note = _diff("apply_patch", {"path": "src/pkg/a.py", "old": "nine", "new": "9"}, ws)
    assert diff is None and note is not None and "was not found" in note and "the gate will refuse it" in note
    diff, _ = _diff("move_path", {"path": "src/pkg/b.py", "to": "src/c.py"}, ws)
    assert diff == "diff --git a/src/pkg/b.py b/src/c.py\nrename from src/pkg/b.py\nrename to src/c.py\n"
    diff, _ = _diff("delete_path", {"path": "src/pkg/b.py"}, ws)
    assert diff is not None and "-x = 'b'" in diff and "+++ /dev/null" in diff
    _, note = _diff("delete_path", {"path": "src/pkg", "recursive": True}, ws)
    assert note == "deletes the directory src/pkg and everything in it: a.py, b.py"
