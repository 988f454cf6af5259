"""list_dir, read_file, write_file, apply_patch: output formats, caps, effects and reconcile."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from longrun.errors import ToolError
from longrun.models.state import NextAction
from longrun.tools import APPLY_PATCH, LIST_DIR, READ_FILE, WRITE_FILE, Tool, ToolContext
from longrun.tools.files import MAX_READ_BYTES


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "ws"
    (w / "pkg" / "__pycache__").mkdir(parents=True)
    (w / ".git").mkdir()
    (w / ".venv").mkdir()
    (w / "b.txt").write_text("two\n")
    (w / "a.py").write_text("line one\nline two\nline three\n")
    (w / "pkg" / "mod.py").write_text("x = 1\n")
    return w


def ctx(ws: Path, before: str | None = None) -> ToolContext:
    return ToolContext(run_id="r", workspace=ws, before=before)


def run(tool: Tool, args: dict, c: ToolContext) -> str:
    assert tool.run is not None
    return tool.run(args, c).text


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- list_dir ---------------------------------------------------------------------------------


def test_list_dir_format(ws: Path) -> None:
    assert run(LIST_DIR, {}, ctx(ws)) == "a.py\nb.txt\npkg/"
    assert run(LIST_DIR, {"path": "pkg"}, ctx(ws)) == "mod.py"


def test_list_dir_errors(ws: Path) -> None:
    with pytest.raises(ToolError, match="no such directory 'nope'"):
        run(LIST_DIR, {"path": "nope"}, ctx(ws))
    with pytest.raises(ToolError, match="is a file"):
        run(LIST_DIR, {"path": "a.py"}, ctx(ws))


# --- read_file --------------------------------------------------------------------------------


def test_read_file_cat_n_format(ws: Path) -> None:
    assert run(READ_FILE, {"path": "a.py"}, ctx(ws)) == "     1\tline one\n     2\tline two\n     3\tline three"


def test_read_file_offset_and_limit(ws: Path) -> None:
    text = run(READ_FILE, {"path": "a.py", "offset": 2, "limit": 1}, ctx(ws))
    assert text.splitlines()[0] == "     2\tline two"
    assert "call read_file with offset=3" in text
    assert "past the end" in run(READ_FILE, {"path": "a.py", "offset": 9}, ctx(ws))


def test_read_file_empty_and_missing(ws: Path) -> None:
    (ws / "empty").write_bytes(b"")
    assert run(READ_FILE, {"path": "empty"}, ctx(ws)) == "[empty file]"
    with pytest.raises(ToolError, match="no such file 'nope.py'"):
        run(READ_FILE, {"path": "nope.py"}, ctx(ws))
    with pytest.raises(ToolError, match="is a directory"):
        run(READ_FILE, {"path": "pkg"}, ctx(ws))


def test_read_file_invalid_utf8(ws: Path) -> None:
    (ws / "latin.txt").write_bytes(b"caf\xe9\n")
    text = run(READ_FILE, {"path": "latin.txt"}, ctx(ws))
    assert text.startswith("     1\tcaf\ufffd")
    assert "[invalid UTF-8" in text


def test_read_file_binary(ws: Path) -> None:
    (ws / "blob.bin").write_bytes(b"\x89PNG\x00\x01\x02\xff\n")
    text = run(READ_FILE, {"path": "blob.bin"}, ctx(ws))
    assert "\x00" not in text
    assert "[binary file" in text


def test_read_file_big_file_is_capped(ws: Path) -> None:
    big = ws / "big.txt"
    with big.open("wb") as f:
        line = b"x" * 99 + b"\n"
        for _ in range(500_000):  # 50 MB
            f.write(line)
    text = run(READ_FILE, {"path": "big.txt", "limit": 100_000}, ctx(ws))
    assert len(text.encode()) < MAX_READ_BYTES * 1.2
    assert "byte output cap" in text and "call read_file with offset=" in text


def test_read_file_long_line_is_cut(ws: Path) -> None:
    (ws / "min.js").write_bytes(b"a" * 10_000_000 + b"\nsecond\n")
    lines = run(READ_FILE, {"path": "min.js"}, ctx(ws)).splitlines()
    assert lines[0].endswith("[line truncated]") and len(lines[0]) < 5000
    assert lines[1] == "     2\tsecond"


# --- write_file -------------------------------------------------------------------------------


def test_write_file_writes_and_returns_hash(ws: Path) -> None:
    out = WRITE_FILE.run({"path": "new/dir/f.txt", "content": "héllo\n"}, ctx(ws))  # type: ignore[misc]
    data = (ws / "new" / "dir" / "f.txt").read_bytes()
    assert data == "héllo\n".encode()
    assert out.external_id == sha(data)
    assert out.text == f"wrote {len(data)} bytes to new/dir/f.txt (sha256 {sha(data)})"
    assert not [p for p in (ws / "new" / "dir").iterdir() if p.name.startswith(".longrun-")]


def test_write_file_declaration() -> None:
    assert WRITE_FILE.kind == "effect" and WRITE_FILE.needs_approval
    assert WRITE_FILE.allowed_next_actions == {NextAction.edit}


def test_write_file_reconcile_confirmed(ws: Path) -> None:
    args = {"path": "b.txt", "content": "new\n"}
    before = WRITE_FILE.fingerprint(args, ctx(ws))  # type: ignore[misc]
    WRITE_FILE.run(args, ctx(ws))  # type: ignore[misc]
    out = WRITE_FILE.reconcile(args, ctx(ws, before))  # type: ignore[misc]
    assert out.status == "confirmed" and out.external_id == sha(b"new\n")


def test_write_file_reconcile_none_when_unchanged_or_missing(ws: Path) -> None:
    args = {"path": "b.txt", "content": "new\n"}
    before = WRITE_FILE.fingerprint(args, ctx(ws))  # type: ignore[misc]
    assert WRITE_FILE.reconcile(args, ctx(ws, before)).status == "none"  # type: ignore[misc]
    missing = {"path": "never.txt", "content": "x"}
    assert WRITE_FILE.reconcile(missing, ctx(ws)).status == "none"  # type: ignore[misc]


def test_write_file_reconcile_undecidable(ws: Path) -> None:
    args = {"path": "b.txt", "content": "new\n"}
    before = WRITE_FILE.fingerprint(args, ctx(ws))  # type: ignore[misc]
    (ws / "b.txt").write_text("somebody else\n")
    out = WRITE_FILE.reconcile(args, ctx(ws, before))  # type: ignore[misc]
    assert out.status == "undecidable"
    # Without a recorded fingerprint, an existing file that differs cannot be decided either.
    (ws / "b.txt").write_text("two\n")
    assert WRITE_FILE.reconcile(args, ctx(ws)).status == "undecidable"  # type: ignore[misc]


# --- apply_patch ------------------------------------------------------------------------------


def test_apply_patch_replaces_one_occurrence(ws: Path) -> None:
    out = APPLY_PATCH.run({"path": "a.py", "old": "line two", "new": "line 2"}, ctx(ws))  # type: ignore[misc]
    data = (ws / "a.py").read_bytes()
    assert data == b"line one\nline 2\nline three\n"
    assert out.external_id == sha(data)
    assert out.text.startswith("patched a.py: replaced 1 occurrence")


def test_apply_patch_zero_or_many(ws: Path) -> None:
    with pytest.raises(ToolError, match="not found"):
        APPLY_PATCH.run({"path": "a.py", "old": "absent", "new": "x"}, ctx(ws))  # type: ignore[misc]
    with pytest.raises(ToolError, match="occurs 3 times"):
        APPLY_PATCH.run({"path": "a.py", "old": "line", "new": "LINE"}, ctx(ws))  # type: ignore[misc]
    with pytest.raises(ToolError, match="identical"):
        APPLY_PATCH.run({"path": "a.py", "old": "one", "new": "one"}, ctx(ws))  # type: ignore[misc]
    with pytest.raises(ToolError, match="no such file"):
        APPLY_PATCH.run({"path": "zz.py", "old": "a", "new": "b"}, ctx(ws))  # type: ignore[misc]
    assert (ws / "a.py").read_text() == "line one\nline two\nline three\n"


def test_apply_patch_reconcile_three_outcomes(ws: Path) -> None:
    args = {"path": "a.py", "old": "line two", "new": "line 2"}
    assert APPLY_PATCH.reconcile(args, ctx(ws)).status == "none"  # type: ignore[misc]
    APPLY_PATCH.run(args, ctx(ws))  # type: ignore[misc]
    out = APPLY_PATCH.reconcile(args, ctx(ws))  # type: ignore[misc]
    assert out.status == "confirmed" and out.external_id == sha((ws / "a.py").read_bytes())
    (ws / "a.py").write_text("line two\nline 2\n")  # both present: cannot tell
    assert APPLY_PATCH.reconcile(args, ctx(ws)).status == "undecidable"  # type: ignore[misc]


def test_apply_patch_reconcile_when_new_contains_old(ws: Path) -> None:
    args = {"path": "a.py", "old": "line two", "new": "line two and a half"}
    before = APPLY_PATCH.fingerprint(args, ctx(ws))  # type: ignore[misc]
    assert APPLY_PATCH.reconcile(args, ctx(ws)).status == "undecidable"  # type: ignore[misc]
    assert APPLY_PATCH.reconcile(args, ctx(ws, before)).status == "none"  # type: ignore[misc]
    APPLY_PATCH.run(args, ctx(ws))  # type: ignore[misc]
    assert APPLY_PATCH.reconcile(args, ctx(ws, before)).status == "confirmed"  # type: ignore[misc]


def test_apply_patch_reconcile_deletion(ws: Path) -> None:
    args = {"path": "a.py", "old": "line two\n", "new": ""}
    assert APPLY_PATCH.reconcile(args, ctx(ws)).status == "none"  # type: ignore[misc]
    APPLY_PATCH.run(args, ctx(ws))  # type: ignore[misc]
    assert APPLY_PATCH.reconcile(args, ctx(ws)).status == "confirmed"  # type: ignore[misc]


def test_apply_patch_refuses_non_utf8(ws: Path) -> None:
    (ws / "latin.txt").write_bytes(b"caf\xe9\n")
    with pytest.raises(ToolError, match="not valid UTF-8"):
        APPLY_PATCH.run({"path": "latin.txt", "old": "caf", "new": "x"}, ctx(ws))  # type: ignore[misc]


def test_os_errors_become_tool_errors(ws: Path) -> None:
    with pytest.raises(ToolError, match=r"write_file failed \('a.py/sub.txt'\)"):
        WRITE_FILE.run({"path": "a.py/sub.txt", "content": "x"}, ctx(ws))  # type: ignore[misc]
