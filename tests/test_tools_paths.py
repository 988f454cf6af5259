"""Workspace confinement: the path corpus of REFERENCE.md against `confine` and every path tool."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from longrun.errors import ToolError, WorkspaceEscape
from longrun.tools import ToolContext, confine, default_registry


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace with a sibling directory sharing its name prefix and a file outside."""
    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "app.py").write_text("print('hi')\n")
    (tmp_path / "wsevil").mkdir()
    (tmp_path / "wsevil" / "x").write_text("sibling secret\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("outside secret\n")
    os.symlink(tmp_path / "outside" / "secret.txt", workspace / "link_file")
    os.symlink(tmp_path / "outside", workspace / "link_dir")
    os.symlink(tmp_path / "outside" / "new.txt", workspace / "dangling")
    return workspace


ESCAPES = [
    "../x",
    "../../etc/passwd",
    "/etc/passwd",
    "../wsevil/x",
    "src/../../wsevil/x",
    "link_file",
    "link_dir/secret.txt",
    "link_dir",
    "dangling",
    "src/app.py\x00.txt",
]


@pytest.mark.parametrize("path", ESCAPES)
def test_confine_refuses_escapes(ws: Path, path: str) -> None:
    with pytest.raises(WorkspaceEscape) as err:
        confine(ws, path)
    assert repr(path) in str(err.value)


def test_confine_refuses_absolute_path_outside(ws: Path, tmp_path: Path) -> None:
    with pytest.raises(WorkspaceEscape, match="outside the workspace"):
        confine(ws, str(tmp_path / "outside" / "secret.txt"))


@pytest.mark.parametrize("path", [".", "src", "src/app.py", "./src/../src/app.py", "new/dir/file.txt"])
def test_confine_accepts_inside(ws: Path, path: str) -> None:
    resolved = confine(ws, path)
    assert resolved.is_relative_to(ws.resolve())


def test_confine_accepts_absolute_path_inside(ws: Path) -> None:
    assert confine(ws, str(ws / "src" / "app.py")) == (ws / "src" / "app.py").resolve()


def test_confine_accepts_symlink_that_stays_inside(ws: Path) -> None:
    os.symlink(ws / "src", ws / "inner")
    assert confine(ws, "inner/app.py") == (ws / "src" / "app.py").resolve()


def _path_calls(path: str) -> list[tuple[str, dict]]:
    return [
        ("list_dir", {"path": path}),
        ("read_file", {"path": path}),
        ("grep", {"pattern": "secret", "path": path}),
        ("write_file", {"path": path, "content": "pwned"}),
        ("apply_patch", {"path": path, "old": "secret", "new": "pwned"}),
    ]


@pytest.mark.parametrize("path", ESCAPES)
def test_every_path_tool_refuses_escapes(ws: Path, tmp_path: Path, path: str) -> None:
    registry = default_registry()
    ctx = ToolContext(run_id="r", workspace=ws)
    for name, args in _path_calls(path):
        tool = registry.get(name)
        assert tool.check is not None
        reason = tool.check(args, ctx)
        assert reason and repr(path) in reason, (name, reason)
        with pytest.raises(WorkspaceEscape):
            tool.run(args, ctx)  # type: ignore[misc]
    assert (tmp_path / "outside" / "secret.txt").read_text() == "outside secret\n"
    assert (tmp_path / "wsevil" / "x").read_text() == "sibling secret\n"
    assert not (tmp_path / "outside" / "new.txt").exists()


def test_effect_tools_refuse_dotdot_even_inside(ws: Path) -> None:
    registry = default_registry()
    ctx = ToolContext(run_id="r", workspace=ws)
    args = {"path": "src/../src/app.py", "content": "x"}
    assert "'..'" in (registry.get("write_file").check(args, ctx) or "")  # type: ignore[misc]
    with pytest.raises(WorkspaceEscape, match=r"contains '\.\.'"):
        registry.get("write_file").run(args, ctx)  # type: ignore[misc]
    assert (ws / "src" / "app.py").read_text() == "print('hi')\n"


def test_effect_tools_refuse_git_dir(ws: Path) -> None:
    (ws / ".git" / "hooks").mkdir(parents=True)
    registry = default_registry()
    ctx = ToolContext(run_id="r", workspace=ws)
    args = {"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"}
    assert ".git" in (registry.get("write_file").check(args, ctx) or "")  # type: ignore[misc]
    with pytest.raises(ToolError, match="may not write"):
        registry.get("write_file").run(args, ctx)  # type: ignore[misc]
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()


def test_paths_inside_pass_check(ws: Path) -> None:
    registry = default_registry()
    ctx = ToolContext(run_id="r", workspace=ws)
    for name, args in _path_calls("src/app.py"):
        if name == "list_dir":
            args = {"path": "src"}
        if name == "apply_patch":
            args = {**args, "old": "print"}
        assert registry.get(name).check(args, ctx) is None, name  # type: ignore[misc]


def test_patch_check_wants_the_old_text_in_the_file_now(ws: Path) -> None:
    """Gate rule 7: evidence comes from the workspace, not from what the model was told."""
    check = default_registry().get("apply_patch").check
    ctx = ToolContext(run_id="r", workspace=ws)
    assert "occurs 0 times" in (check({"path": "src/app.py", "old": "secret", "new": "x"}, ctx) or "")  # type: ignore[misc]
    (ws / "src" / "app.py").write_text("print('hi')\nprint('hi')\n")
    assert "occurs 2 times" in (check({"path": "src/app.py", "old": "print('hi')", "new": "x"}, ctx) or "")  # type: ignore[misc]
