"""Tables, the machine description and progress lines shared by the benchmarks.

Every figure a benchmark prints is a `Table` cell computed in that run; `bench.run` renders the
tables to stdout and into BENCHMARKS.md.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from dataclasses import dataclass, field


@dataclass
class Table:
    """One results table: a title, column names, rows of already formatted cells, and notes
    (how to read it, what each target is and whether it was met)."""

    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, *cells: object) -> None:
        self.rows.append([str(c) for c in cells])

    def row(self, first_cell: str) -> list[str]:
        """The row whose first cell is `first_cell` (KeyError when missing)."""
        for r in self.rows:
            if r[0] == first_cell:
                return r
        raise KeyError(first_cell)

    def markdown(self) -> str:
        out = [f"### {self.title}", "", "| " + " | ".join(self.columns) + " |",
               "|" + "|".join("---" for _ in self.columns) + "|"]
        out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in self.rows]
        if self.notes:
            out.append("")
            out += [f"- {n}" for n in self.notes]
        return "\n".join(out)

    def text(self) -> str:
        widths = [max(len(c), *(len(r[i]) for r in self.rows)) if self.rows else len(c) for i, c in enumerate(self.columns)]
        line = "  ".join(c.ljust(w) for c, w in zip(self.columns, widths, strict=False))
        out = [self.title, "=" * len(self.title), line, "-" * len(line)]
        out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) for r in self.rows]
        out += [f"  * {n}" for n in self.notes]
        return "\n".join(out)


@dataclass
class Section:
    """What one benchmark module returns: its tables, or the reason it was skipped."""

    name: str
    tables: list[Table] = field(default_factory=list)
    skipped: str | None = None
    seconds: float = 0.0
    reproduce: str = ""


def progress(message: str) -> None:
    """A progress line on stderr (stdout carries the tables)."""
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def ratio(value: float, floor: float, digits: int = 2) -> str:
    return f"{value / floor:.{digits}f}x" if floor else "n/a"


def pct(value: float, digits: int = 1) -> str:
    return f"{value * 100:.{digits}f}%"


def mark(ok: bool) -> str:
    return "met" if ok else "MISSED"


def machine() -> dict[str, str]:
    """Cores, memory and CPU model of this machine, from /proc where available."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = "unknown"
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal"):
                    mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
                    break
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cores": f"{usable} usable ({os.cpu_count()} online)",
        "memory": mem,
        "cpu": cpu,
        "python": platform.python_version(),
        "os": f"{platform.system()} {platform.release()}",
    }
