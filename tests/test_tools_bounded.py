"""One tool call cannot freeze a worker (issue 15, finding 3): grep's pattern has a time limit and
leaves the GIL to the other threads, redaction is linear on adversarial text, and apply_patch's
gate check honours the tool's size cap and counts in linear time."""

from __future__ import annotations

import os
import threading
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from longrun.errors import ToolError
from longrun.redact import Redactor
from longrun.tools import APPLY_PATCH, GREP, ToolContext
from longrun.tools import search as search_module
from longrun.tools.files import MAX_PATCH_FILE_BYTES

LIMIT = 1.0
"""grep's time limit in these tests (seconds)."""

# Canary key material assembled at run time so that this file holds no secret-shaped literal.
PEM = "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq\nZm9vYmFy==\n-----END RSA " + "PRIVATE KEY-----"


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(search_module, "GREP_TIME_LIMIT", LIMIT, raising=False)
    (tmp_path / "a.txt").write_text("a" * 38 + "!\n" + "An input string that takes a long time or!\n")
    return tmp_path


@contextmanager
def ticker(every: float = 0.01) -> Iterator[list[float]]:
    """A thread that notes the time every `every` seconds, as another run's work on the worker
    would; yields the list of gaps between its ticks."""
    gaps: list[float] = []
    stop = threading.Event()

    def tick() -> None:
        last = time.monotonic()
        while not stop.wait(every):
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        yield gaps
    finally:
        stop.set()
        thread.join(timeout=5)


@pytest.mark.timeout(60)  # without its limit, the pattern runs for hours
def test_pathological_grep_pattern_is_an_error_within_the_limit_while_others_keep_pace(ws: Path) -> None:
    with ticker() as gaps:
        with pytest.raises(ToolError, match="Simplify it") as err:
            GREP.run({"pattern": r"(a|aa)+$"}, ToolContext(run_id="r", workspace=ws))  # type: ignore[misc]
    assert f"stopped after its {LIMIT:g} s limit (at a.txt:1)" in str(err.value)  # the tool's own clock stopped it
    assert len(gaps) >= 20  # the other thread ticked all along (a held GIL leaves it a tick or two)


@pytest.mark.timeout(30)
def test_the_reviewed_pattern_on_a_sentence_returns_promptly(ws: Path) -> None:
    """`^(\\w+\\s?)+$` on a 41-character sentence ran past 60 s under `re`."""
    try:
        out = GREP.run({"pattern": r"^(\w+\s?)+$", "glob": "a.txt"}, ToolContext(run_id="r", workspace=ws))  # type: ignore[misc]
        assert out.text == "[no matches]"
    except ToolError as exc:
        assert "Simplify it" in str(exc)


def test_grep_keeps_its_output_for_normal_patterns(ws: Path) -> None:
    out = GREP.run({"pattern": r"^An (\w+) string"}, ToolContext(run_id="r", workspace=ws))  # type: ignore[misc]
    assert out.text == "a.txt:2:An input string that takes a long time or!"


@pytest.mark.timeout(10)  # 29 s before
def test_redaction_of_8000_begin_lines_is_fast_and_still_redacts_a_real_key() -> None:
    text = "config\n" + PEM + "\n" + "-----BEGIN PRIVATE KEY-----\n" * 8000 + "# tail"
    out = Redactor().redact(text)
    assert "MIIEowIBAAKCAQEA7bq" not in out and "Zm9vYmFy" not in out
    assert out.startswith("config\n[REDACTED:private_key]\n[REDACTED:private_key]")
    assert out.count("[REDACTED:private_key]") == 8001
    assert out.endswith("# tail")


@pytest.mark.timeout(8)  # quadratic before: about 16 s
def test_redaction_of_a_chain_of_keywords_is_fast_and_still_redacts_the_password() -> None:
    text = "pwd:" * 25_000 + " pwd:hunter22"
    out = Redactor().redact(text)
    assert "hunter22" not in out
    assert out.endswith("[REDACTED:password]")


def test_patch_check_refuses_a_file_over_the_cap_without_reading_it(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    with big.open("wb") as f:
        f.write(b"needle\n")
    os.truncate(big, MAX_PATCH_FILE_BYTES + 1)  # sparse: no disk used
    tracemalloc.start()
    try:
        refusal = APPLY_PATCH.check({"path": "big.txt", "old": "needle", "new": "x"}, ToolContext(run_id="r", workspace=tmp_path))  # type: ignore[misc]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert refusal is not None and "larger than" in refusal and "will not load it" in refusal
    assert peak < MAX_PATCH_FILE_BYTES // 10


@pytest.mark.timeout(10)  # a count quadratic in the file's length does not finish within this
def test_patch_check_counts_periodic_text_in_linear_time(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a" * 2_000_000)
    ctx = ToolContext(run_id="r", workspace=tmp_path)
    refusal = APPLY_PATCH.check({"path": "a.txt", "old": "a" * 2000, "new": "b"}, ctx)  # type: ignore[misc]
    assert refusal is not None and "occurs 1000 times" in refusal
    (tmp_path / "b.txt").write_text("xaaay")
    assert "occurs 2 times" in (APPLY_PATCH.check({"path": "b.txt", "old": "aa", "new": "b"}, ctx) or "")  # type: ignore[misc]
    assert APPLY_PATCH.check({"path": "b.txt", "old": "aaa", "new": "b"}, ctx) is None  # type: ignore[misc]
