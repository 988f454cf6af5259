"""A file that holds a private key is redacted whole, whatever slice a reader shows (issue 24,
finding 5): `read_file` with an offset past the BEGIN line, `grep` for base64 lines, and the
approver's diff. What the model sees is the tool's text after the `run_tool` activity's redaction,
so each test redacts it as the activity does before looking for key material.

The rule itself is `longrun.redact.file_holds_private_key`; the line-level patterns are in
tests/test_redact.py."""

from __future__ import annotations

import io
import random
import string
from pathlib import Path

import pytest

from longrun.client.approval_view import _diff
from longrun.redact import Redactor
from longrun.redact_files import PRIVATE_KEY_FILE, file_holds_private_key, holds_private_key
from longrun.tools import GREP, READ_FILE, ToolContext

B64 = string.ascii_letters + string.digits + "+/"
# Armor lines assembled at run time so that this file holds no key-shaped line of its own.
DASHES = "-" * 5


def armor(kind: str, end: bool = False) -> str:
    return DASHES + ("END " if end else "BEGIN ") + kind + DASHES


def body(width: int, lines: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(B64) for _ in range(width)) for _ in range(lines)]


def openssh_key(seed: int = 1) -> tuple[str, list[str]]:
    magic = "b3BlbnNzaC1" + "rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW"  # "openssh-key-v1\0none..."
    lines = [magic, *body(70, 6, seed)]
    kind = "OPENSSH PRIVATE KEY"
    return "\n".join([armor(kind), *lines, armor(kind, end=True)]) + "\n", lines


def pem_key(seed: int = 2, kind: str = "RSA PRIVATE KEY") -> tuple[str, list[str]]:
    lines = body(64, 8, seed)
    return "\n".join([armor(kind), *lines, armor(kind, end=True)]) + "\n", lines


def seen(text: str) -> str:
    """What the model, the transcript and the artifacts get: the tool's text after the activity's redaction."""
    return Redactor().redact(text)


def leaked(lines: list[str], text: str) -> list[str]:
    return [line for line in lines if line[:24] in text]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "ws"
    w.mkdir()
    (w / "notes.txt").write_text("ordinary\n")
    return w


def ctx(ws: Path) -> ToolContext:
    return ToolContext(run_id="r", workspace=ws)


@pytest.mark.parametrize("offset", [2, 4, 8])
def test_read_file_of_a_key_past_its_begin_line_shows_no_key_body(ws: Path, offset: int) -> None:
    text, lines = openssh_key()
    (ws / "deploy_key").write_text(text)
    out = seen(READ_FILE.run({"path": "deploy_key", "offset": offset, "limit": 3}, ctx(ws)).text)  # type: ignore[misc]
    assert leaked(lines, out) == []
    assert PRIVATE_KEY_FILE in out and "holds a private key" in out


def test_read_file_of_a_pem_key_inside_yaml_shows_no_key_body(ws: Path) -> None:
    text, lines = pem_key()
    indented = "".join(f"    {line}\n" for line in text.splitlines())
    (ws / "values.yaml").write_text("tls:\n  cert: public.pem\n  key: |\n" + indented + "replicas: 3\n")
    out = seen(READ_FILE.run({"path": "values.yaml", "offset": 6, "limit": 4}, ctx(ws)).text)  # type: ignore[misc]
    assert leaked(lines, out) == []
    assert PRIVATE_KEY_FILE in out


def test_grep_for_base64_lines_shows_no_key_body(ws: Path) -> None:
    ssh, ssh_lines = openssh_key()
    pem, pem_lines = pem_key()
    (ws / "deploy_key").write_text(ssh)
    (ws / "certs").mkdir()
    (ws / "certs" / "server.key").write_text(pem)
    (ws / "data.txt").write_text("QUJDRGVmZ2hpams0NTY3ODkwYWJj\n")  # base64, but no key in this file
    out = seen(GREP.run({"pattern": r"^[A-Za-z0-9+/=]{16,}$"}, ctx(ws)).text)  # type: ignore[misc]
    assert leaked(ssh_lines + pem_lines, out) == []
    # the contract holds: one `relpath:lineno:line` per hit, the key files' lines hidden, others shown
    assert f"deploy_key:2:{PRIVATE_KEY_FILE}" in out and f"certs/server.key:9:{PRIVATE_KEY_FILE}" in out
    assert "data.txt:1:QUJDRGVmZ2hpams0NTY3ODkwYWJj" in out
    assert "holds a private key" in out


def test_a_key_file_read_whole_is_still_redacted(ws: Path) -> None:
    text, lines = pem_key(kind="PRIVATE KEY")
    (ws / "k.pem").write_text(text)
    out = seen(READ_FILE.run({"path": "k.pem"}, ctx(ws)).text)  # type: ignore[misc]
    assert leaked(lines, out) == [] and PRIVATE_KEY_FILE in out


@pytest.mark.parametrize(
    "content",
    [
        # code that recognises keys, with the armor line as a literal: not a key file
        f'if line.strip() == "{armor("RSA PRIVATE KEY")}":\n    start = True\nx = "QUJDRGVmZ2hpams0NTY3ODkw"\n',
        # public material
        "\n".join([armor("CERTIFICATE"), *body(64, 6, 3), armor("CERTIFICATE", end=True)]) + "\n",
        "\n".join([armor("PUBLIC KEY"), *body(64, 4, 4), armor("PUBLIC KEY", end=True)]) + "\n",
        "# authorized_keys\nssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl me@host\n",
        f"# docs\nA key file starts with {armor('PRIVATE KEY')} and ends with its END line; never commit one.\n",
    ],
)
def test_files_without_a_private_key_are_shown(ws: Path, content: str) -> None:
    (ws / "f.txt").write_text(content)
    out = READ_FILE.run({"path": "f.txt", "offset": 2}, ctx(ws)).text  # type: ignore[misc]
    assert PRIVATE_KEY_FILE not in out
    assert content.splitlines()[1] in out


@pytest.mark.parametrize(
    ("make", "holds"),
    [
        (lambda: openssh_key()[0], True),
        (lambda: pem_key()[0], True),
        (lambda: pem_key(kind="ENCRYPTED PRIVATE KEY")[0], True),
        (lambda: pem_key(kind="EC PRIVATE KEY")[0].replace("\n", "\r\n"), True),
        (lambda: "\n".join([armor("PGP PRIVATE KEY BLOCK"), "Version: x", "", *body(64, 3, 5)]) + "\n", True),
        (lambda: "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPrivate-Lines: 1\nAAAA\n", True),
        (lambda: "\n".join(openssh_key()[1][:3]) + "\n", True),  # the OpenSSH body's magic, headerless
        (lambda: "\n".join(body(64, 4, 6)) + "\n", False),
        (lambda: f"x = '{armor('PRIVATE KEY')}'\n", False),
    ],
)
def test_holds_private_key_on_text_and_on_an_open_file(make, holds: bool) -> None:
    text = make()
    assert holds_private_key(text) is holds
    assert holds_private_key(text.encode()) is holds
    f = io.BytesIO(text.encode())
    f.seek(5)
    assert file_holds_private_key(f, shown_until=7) is holds
    assert f.tell() == 5  # the reader's position is left where it was


def test_a_begin_line_across_a_chunk_boundary_is_found() -> None:
    text, _ = pem_key()
    for pad in range(1 << 16, (1 << 16) + 80, 7):  # the scan reads in chunks; the armor line straddles one
        data = ("x" * (pad - 20) + "\n" + text).encode()
        assert file_holds_private_key(io.BytesIO(data), shown_until=len(data)), pad


def test_the_approvers_diff_of_a_key_file_is_not_shown(ws: Path) -> None:
    text, lines = pem_key()
    (ws / "server.key").write_text(text)
    diff, note = _diff("write_file", {"path": "server.key", "content": "rotated\n"}, ws)
    assert diff is None and note is not None and "holds a private key" in note
    diff, note = _diff("apply_patch", {"path": "server.key", "old": lines[3], "new": "x"}, ws)
    assert diff is None and note is not None and "holds a private key" in note
    diff, note = _diff("delete_path", {"path": "server.key"}, ws)
    assert diff is None and note is not None and "holds a private key" in note
    diff, note = _diff("write_file", {"path": "notes.txt", "content": "changed\n"}, ws)
    assert diff is not None and "+changed" in diff
