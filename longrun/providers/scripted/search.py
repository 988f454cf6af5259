"""The survey's search: `grep` the Python files for the objective's terms, rank what matched.

Used by the parent's survey stage and by a child whose brief names no files. When no term matches
(or there are none), `FALLBACK_PATTERN` lists every code file instead. The best-matching non-test
files become the candidates (test files only when nothing else matched).
"""

from __future__ import annotations

import re

MAX_CANDIDATES = 4
FALLBACK_PATTERN = r"^\s*(def|class) "
CODE_GLOB = "*.py"


def terms_pattern(terms: list[str]) -> str | None:
    """The `grep` pattern for the objective's terms (None: no terms, use `FALLBACK_PATTERN`)."""
    return r"(?i)\b(" + "|".join(re.escape(t) for t in terms) + ")" if terms else None


def is_test_path(path: str) -> bool:
    parts = path.replace("\\", "/").split("/")
    name = parts[-1]
    return any(p in ("tests", "test") for p in parts[:-1]) or name.startswith("test_") or name.endswith("_test.py")


def rank_candidates(grep_output: str, limit: int = MAX_CANDIDATES) -> list[str]:
    """Files with the most matching lines first; non-test files before tests."""
    counts: dict[str, int] = {}
    for line in grep_output.splitlines():
        m = re.match(r"^(.+?):(\d+):", line)
        if m:
            counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    code = sorted((p for p in counts if not is_test_path(p)), key=lambda p: (-counts[p], p))
    tests = sorted((p for p in counts if is_test_path(p)), key=lambda p: (-counts[p], p))
    return (code or tests)[:limit]
