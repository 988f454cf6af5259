"""Redaction on adversarial text: time against size, to show it grows linearly.

Every tool output, transcript message and audit event goes through `Redactor.redact`, so a text
that makes one of its patterns rescan (a private key BEGIN line without its END, a chain of
`pwd:` keywords) would hold a worker for minutes. Each input is redacted at 10 kB, 100 kB and
1 MB; linear time means about 10x per 10x of size, quadratic 100x.

The second table is the other end: the per-string cost on short typical strings (tool names, paths,
span attributes, one-line messages), which tracing, logs and the audit pay on every turn. It times
`redact` against `redact_per_pattern`, the path before issue 28 (every pattern's hints tested one
by one), in the same process.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from bench.report import Section, Table, mark, progress
from longrun.redact import Redactor
from longrun.redact_files import holds_private_key

SIZES = (10_000, 100_000, 1_000_000)
LINEAR_ENOUGH = 20.0
"""The 1 MB time over the 100 kB time must stay under this (linear: ~10, quadratic: ~100)."""


def _repeat(unit: str) -> Callable[[int], str]:
    return lambda n: (unit * (n // len(unit) + 1))[:n]


INPUTS: dict[str, Callable[[int], str]] = {
    "BEGIN lines, no END": _repeat("-----BEGIN PRIVATE KEY-----\n"),
    "one base64-like run": _repeat("QUJDRGVmZ2hpams0NTY3+/=="),
    "`password=` tokens": _repeat("password=hunter22 "),
    "`pwd:` keyword chain": _repeat("pwd:"),
    "`token=` and bearer words": _repeat("token=x bearer "),
    "URL `user:` without `@`": _repeat("a://b:c/d#e"),
    "PGP armor headers, no END": _repeat("-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: x\n"),
    "`.pgpass`-like lines": _repeat("h:5432:d:u:pw h:1:\n"),
    "`password =` plain words": _repeat("password = word password=x "),
    "`authorization: basic` words": _repeat("authorization: basic "),
    "Discord-like dotted runs": _repeat("M" + "a" * 24 + ".bcdefg." + "h" * 20),
    "`.netrc` keyword chains": _repeat("machine a login b account c password "),
    "`*_KEY:` names, no value": _repeat("A_KEY:B_KEY= C_KEY"),
    "`&` inside values": _repeat("password: a&b&c1&"),
    "`digit:` runs on one line": _repeat("0:"),
    "OpenSSH body starts, base64 lines": _repeat("b3BlbnNzaC1rZXktdjE\nAAAAAAAA\n  QUJD\n"),
}
KEY_FILE_INPUTS: dict[str, Callable[[int], str]] = {
    "armor lines, no line break": _repeat("-----BEGIN RSA PRIVATE KEY-----"),
    "END-like lines": _repeat("\n-----END " + "A" * 39),
}
"""Inputs of `holds_private_key`, the scan a reader makes of a whole file (`read_file`, `grep`)."""


def _seconds(fn: Callable[[str], object], text: str, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(text)
        best = min(best, time.perf_counter() - t0)
    return best


SHORT: dict[str, str] = {
    "tool name": "read_file",
    "model name": "claude-sonnet-4-5",
    "path": "src/longrun/workflows/agent.py",
    "shell command": "git diff --stat HEAD~1 && pytest tests/test_budget.py -q",
    "message": "Reading the config file to find where the retry policy is set.",
    "error line": "FileNotFoundError: [Errno 2] No such file or directory: 'src/app/settings.py'",
    "longer message": "The tests pass now; the token budget check reads the ledger before each model call, "
                          "see budget.py line 120.",
    "JSON arguments": '{"path": "src/longrun/budget.py", "start": 40, "limit": 80, '
                                 '"pattern": "def check_budget", "context_lines": 3}',
    "with a secret": "export DATABASE_URL=postgres://app:hunter2@db.internal:5432/prod",
}
"""Short strings as span attributes, log lines and audit fields carry them."""


def _per_call_us(fn: Callable[[str], object], text: str, calls: int = 2000, rounds: int = 7) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn(text)
        best = min(best, (time.perf_counter() - t0) / calls)
    return best * 1e6


def short_strings_table() -> Table:
    redactor = Redactor()
    table = Table(
        "Redaction cost per short string",
        ["string", "length", "per-pattern path (before)", "redact()", "speed-up", "same output"],
    )
    for name, text in SHORT.items():
        progress(f"redaction: short {name}")
        before = _per_call_us(redactor.redact_per_pattern, text)
        after = _per_call_us(redactor.redact, text)
        same = redactor.redact(text) == redactor.redact_per_pattern(text)
        table.add(name, str(len(text)), f"{before:.1f} us", f"{after:.1f} us", f"{before / after:.1f}x", mark(same))
    table.notes += [
        "Best of 7 rounds of 2,000 calls, in one process; `Redactor()` with the default patterns. Before is "
        "`redact_per_pattern` (issue 28's starting point, kept as the tests' reference); after is `redact`.",
    ]
    return table


def run() -> Section:
    t0 = time.perf_counter()
    redactor = Redactor()
    table = Table(
        "Redaction time against input size (adversarial inputs)",
        ["input", *(f"{n // 1000:,} kB" for n in SIZES), "x per 10x (100 kB -> 1 MB)", f"under {LINEAR_ENOUGH:g}x"],
    )
    rows = [(name, make, redactor.redact) for name, make in INPUTS.items()]
    rows += [(f"{name} (key-file scan)", make, holds_private_key) for name, make in KEY_FILE_INPUTS.items()]
    for name, make, fn in rows:
        progress(f"redaction: {name}")
        times = [_seconds(fn, make(n), 3 if n < 1_000_000 else 1) for n in SIZES]
        growth = times[2] / times[1] if times[1] else 0.0
        table.add(name, *(f"{t * 1000:.1f} ms" for t in times), f"{growth:.1f}x", mark(growth < LINEAR_ENOUGH))
    table.notes += [
        "Best of 3 at 10 kB and 100 kB, one run at 1 MB; `Redactor()` with the default patterns, and "
        "`holds_private_key` for the rows marked key-file scan.",
        "Before issue 15's fix, 8,000 BEGIN lines (220 kB) took 29 s and the `pwd:` chain grew 100x per 10x.",
    ]
    return Section("redaction", [table, short_strings_table()], seconds=time.perf_counter() - t0, reproduce="python -m bench.run --only redaction")
