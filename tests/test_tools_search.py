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


class PrefixStore(Store):
    """A reader that resolves prefixes as the Postgres store does."""

    def resolve_artifact_prefix(self, prefix: str) -> str:
        found = [k for k in self.blobs if k.startswith(prefix)]
        if len(found) != 1:
            raise ValueError(f"{len(found)} artifacts match")
        return found[0]


def test_read_artifact_by_unique_prefix() -> None:
    data = b"the whole output\nsecond line"
    digest = hashlib.sha256(data).hexdigest()
    twin = digest[:14] + "0" * 50  # shares the first 14 digits
    c = ToolContext(run_id="r", workspace=Path("."), artifacts=PrefixStore({digest: data, twin: b"other"}))
    assert READ_ARTIFACT.run({"sha256": digest[:16]}, c).text == data.decode()  # type: ignore[misc]
    with pytest.raises(ToolError, match=f"sha256 prefix {digest[:12]}: 2 artifacts match"):
        READ_ARTIFACT.run({"sha256": digest[:12]}, c)  # type: ignore[misc]
    with pytest.raises(ToolError, match="0 artifacts match"):
        READ_ARTIFACT.run({"sha256": "f" * 12}, c)  # type: ignore[misc]
    # a reader without prefix resolution needs the full hash
    plain = ToolContext(run_id="r", workspace=Path("."), artifacts=Store({digest: data}))
    with pytest.raises(ToolError, match="needs the full 64-digit sha256"):
        READ_ARTIFACT.run({"sha256": digest[:20]}, plain)  # type: ignore[misc]


def test_read_artifact_prefix_through_the_postgres_store(store) -> None:  # type: ignore[no-untyped-def]
    from longrun.store.repository import InvalidInputError

    data = b"prefix resolution on the primary key\n" * 3
    digest = store.put_artifact(data)
    assert store.resolve_artifact_prefix(digest[:12]) == digest
    assert store.resolve_artifact_prefix(digest) == digest
    c = ToolContext(run_id="r", workspace=Path("."), artifacts=store)
    assert READ_ARTIFACT.run({"sha256": digest[:12]}, c).text == data.decode().rstrip("\n")  # type: ignore[misc]
    missing = "0123456789ab" if not digest.startswith("0123456789ab") else "ba9876543210"
    with pytest.raises(InvalidInputError, match="no artifact"):
        store.resolve_artifact_prefix(missing)
    with pytest.raises(ToolError, match="no artifact"):
        READ_ARTIFACT.run({"sha256": missing}, c)  # type: ignore[misc]
    with pytest.raises(InvalidInputError, match="12 to 64 lowercase hex"):
        store.resolve_artifact_prefix("ABC")
