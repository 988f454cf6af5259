"""grep and read_artifact: formats, caps, bad input."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from longrun.errors import ToolError
from longrun.tools import GREP, READ_ARTIFACT, ToolContext
from longrun.tools.search import MAX_MATCHES


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "ws"
    (w / "src").mkdir(parents=True)
    (w / ".git").mkdir()
    (w / ".git" / "config").write_text("needle in git\n")
    (w / "src" / "a.py").write_text("import os\nneedle = 1\n")
    (w / "src" / "b.txt").write_text("no\nneedle here\n")
    (w / "blob.bin").write_bytes(b"needle\x00\x01")
    (tmp_path / "outside.txt").write_text("needle outside\n")
    os.symlink(tmp_path / "outside.txt", w / "link.txt")
    os.symlink(tmp_path, w / "linkdir")
    return w


def grep(ws: Path, **args: object) -> str:
    return GREP.run(dict(args), ToolContext(run_id="r", workspace=ws)).text  # type: ignore[misc]


def test_grep_format_and_skips(ws: Path) -> None:
    assert grep(ws, pattern="needle") == "src/a.py:2:needle = 1\nsrc/b.txt:2:needle here"


def test_grep_path_and_glob(ws: Path) -> None:
    assert grep(ws, pattern="needle", glob="*.py") == "src/a.py:2:needle = 1"
    assert grep(ws, pattern="needle", path="src/b.txt") == "src/b.txt:2:needle here"
    assert grep(ws, pattern="needle", glob="src/*.txt") == "src/b.txt:2:needle here"
    assert grep(ws, pattern="absent") == "[no matches]"


def test_grep_regex(ws: Path) -> None:
    assert grep(ws, pattern=r"^import\s+\w+$") == "src/a.py:1:import os"


def test_grep_bad_regex(ws: Path) -> None:
    with pytest.raises(ToolError, match="not a valid Python regular expression"):
        grep(ws, pattern="(unclosed")


def test_grep_missing_path(ws: Path) -> None:
    with pytest.raises(ToolError, match="no such file or directory"):
        grep(ws, pattern="x", path="nope")


def test_grep_is_capped(ws: Path) -> None:
    (ws / "many.txt").write_text("hit\n" * (MAX_MATCHES + 100))
    lines = grep(ws, pattern="hit").splitlines()
    assert len(lines) == MAX_MATCHES + 1
    assert lines[-1].startswith(f"[capped at {MAX_MATCHES} matches")
    assert lines[0] == "many.txt:1:hit"


class Store:
    def __init__(self, blobs: dict[str, bytes]) -> None:
        self.blobs = blobs

    def get_artifact(self, sha256: str) -> bytes:
        return self.blobs[sha256]


def test_read_artifact() -> None:
    data = "\n".join(f"line {i}" for i in range(1, 11)).encode()
    digest = hashlib.sha256(data).hexdigest()
    c = ToolContext(run_id="r", workspace=Path("."), artifacts=Store({digest: data}))
    assert READ_ARTIFACT.run({"sha256": digest}, c).text == data.decode()  # type: ignore[misc]
    part = READ_ARTIFACT.run({"sha256": digest, "offset": 3, "limit": 2}, c).text  # type: ignore[misc]
    assert part == "line 3\nline 4\n[lines 3-4 of 10; call read_artifact with offset=5 for more]"
    with pytest.raises(ToolError, match="no artifact with sha256"):
        READ_ARTIFACT.run({"sha256": "0" * 64}, c)  # type: ignore[misc]
    with pytest.raises(ToolError, match="past the end"):
        READ_ARTIFACT.run({"sha256": digest, "offset": 50}, c)  # type: ignore[misc]


def test_read_artifact_without_store() -> None:
    with pytest.raises(ToolError, match="no artifact store"):
        READ_ARTIFACT.run({"sha256": "0" * 64}, ToolContext(run_id="r", workspace=Path(".")))  # type: ignore[misc]
