"""How long each test file takes, for the order `make test` runs files in (tests/conftest.py).

`python -m tests.support.file_seconds LOG` reads the `--durations` table of a full run (best
`--durations=0`, which lists every phase) and writes tests/file_seconds.json: the seconds of each
file's setups, calls and teardowns, summed. The figures only order the files; a stale or missing
entry makes a run less balanced, never wrong. A file the table does not know is placed as if it
took the median: a new long file then still starts before the short ones.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, TypeVar

TABLE = Path(__file__).resolve().parents[1] / "file_seconds.json"
LINE = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s+(?:setup|call|teardown)\s+(\S+?\.py)::")


class _Item(Protocol):
    @property
    def nodeid(self) -> str: ...


T = TypeVar("T", bound=_Item)


def seconds_per_file(log: str) -> dict[str, float]:
    """Seconds per file from pytest's `--durations` lines (`12.34s call  tests/test_x.py::test_y`)."""
    total: dict[str, float] = defaultdict(float)
    for line in log.splitlines():
        m = LINE.match(line)
        if m:
            total[m.group(2)] += float(m.group(1))
    return {path: round(seconds, 1) for path, seconds in sorted(total.items(), key=lambda kv: -kv[1])}


def longest_first(items: Sequence[T], table: dict[str, float] | None = None) -> list[T]:
    """`items` with whole files ordered by their seconds, longest first; a file's own order kept."""
    known = table if table is not None else (json.loads(TABLE.read_text()) if TABLE.is_file() else {})
    default = statistics.median(known.values()) if known else 0.0
    first_seen: dict[str, int] = {}
    for item in items:
        first_seen.setdefault(item.nodeid.split("::")[0], len(first_seen))

    def key(item: T) -> tuple[float, int]:
        path = item.nodeid.split("::")[0]
        return -known.get(path, default), first_seen[path]

    return sorted(items, key=key)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.support.file_seconds LOG  (the output of pytest --durations=0)", file=sys.stderr)
        return 2
    table = seconds_per_file(Path(argv[0]).read_text())
    if not table:
        print(f"no --durations lines in {argv[0]}: run pytest with --durations=0", file=sys.stderr)
        return 1
    TABLE.write_text(json.dumps(table, indent=1) + "\n")
    print(f"{TABLE}: {len(table)} files, {sum(table.values()):.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
