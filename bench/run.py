"""`python -m bench.run` (what `make bench` runs): every benchmark, tables on stdout, progress on
stderr, and BENCHMARKS.md written at the repository root.

    python -m bench.run                       # all of them, writes BENCHMARKS.md
    python -m bench.run --only synthetic      # one (or a comma list); BENCHMARKS.md is not written
    python -m bench.run --output /tmp/b.md    # write elsewhere
    python -m bench.run --only long --long    # the long-run benchmark at 5,000 turns (default 1,000)
    python -m bench.run --only long --long-turns 0 --long-effects 5000   # only 5,000 effects

A benchmark that cannot run here (no real sessions, no `temporal` binary, a failure) is skipped
with its reason printed and written; the others still run.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from bench.report import Section, machine, progress

ROOT = Path(__file__).resolve().parents[1]
ORDER = ("synthetic", "real_sessions", "store", "orchestration", "overhead", "long", "retention",
         "retention_ablation", "conformance", "redaction", "redaction_eval", "console", "extraction", "growth", "turn_read")


MODULES = {
    "synthetic": "bench.synthetic", "real_sessions": "bench.real_sessions", "store": "bench.store",
    "orchestration": "bench.orchestration", "overhead": "bench.overhead", "long": "bench.long_run",
    "retention": "bench.retention.run",
    "retention_ablation": "bench.retention.ablation", "conformance": "bench.conformance", "redaction": "bench.redaction",
    "redaction_eval": "bench.redaction_eval", "console": "bench.console_load",
    "extraction": "bench.extraction", "growth": "bench.growth", "turn_read": "bench.turn_read",
}
"""Each benchmark's module (its `run() -> Section`), imported only when it runs: some need
extras (the peer's SDK) that the others do not."""


def _runner(name: str) -> Callable[[], Section]:
    if name not in MODULES:
        raise ValueError(f"unknown benchmark {name!r}; choose from {', '.join(ORDER)}")
    run: Callable[[], Section] = importlib.import_module(MODULES[name]).run
    return run


def _load() -> str:
    try:
        return " / ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def run_one(name: str) -> Section:
    progress(f"{name}: starting")
    t0 = time.perf_counter()
    try:
        section = _runner(name)()
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        section = Section(name, skipped=f"failed: {type(exc).__name__}: {exc}")
    section.seconds = section.seconds or time.perf_counter() - t0
    progress(f"{name}: {'skipped: ' + section.skipped if section.skipped else 'done'} ({section.seconds:.1f} s)")
    return section


def markdown(sections: list[Section], command: str, total: float, info: dict[str, str]) -> str:
    out = [
        "# Benchmarks",
        "",
        "Written by `make bench` (`python -m bench.run`, source in `bench/`); every figure below was measured in "
        "the run that wrote this file. Targets are the issues' (7; 12 for orchestration; 28 for overhead; 13 for retention; 26 for long); each figure is printed with its ratio to its floor or "
        "reference.",
        "",
        f"- command: `{command}`",
        f"- date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; total {total:.0f} s",
        *(f"- {k}: {v}" for k, v in info.items()),
        "",
        "Reproduce: `make bench` (all; about that long on the machine above), or one benchmark with "
        "`.venv/bin/python -m bench.run --only NAME` (NAME: " + ", ".join(ORDER) + "). The synthetic scenario is "
        "seeded, so its token figures repeat exactly; timings and throughputs vary with the machine and its load.",
        "",
    ]
    for s in sections:
        out.append(f"## {s.name}")
        out.append("")
        if s.skipped:
            out += [f"Skipped: {s.skipped}", ""]
            continue
        out += [f"Took {s.seconds:.1f} s. Reproduce: `{s.reproduce}`.", ""]
        for t in s.tables:
            out += [t.markdown(), ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.splitlines()[0])
    parser.add_argument("--only", help=f"comma list of benchmarks ({', '.join(ORDER)})")
    parser.add_argument("--output", help="where to write the markdown (default: BENCHMARKS.md when all run)")
    parser.add_argument("--long", action="store_true", help="the long-run benchmark at 5,000 turns instead of 1,000")
    parser.add_argument("--long-turns", type=int, metavar="N",
                        help="the long-run benchmark's read run at N turns (0: skip it)")
    parser.add_argument("--long-effects", type=int, metavar="N",
                        help="the long-run benchmark's effect-per-turn run at N turns (0: skip it)")
    args = parser.parse_args(argv)
    if args.long:
        os.environ["LONGRUN_BENCH_LONG"] = "1"
    for value, env in ((args.long_turns, "LONGRUN_BENCH_LONG_TURNS"), (args.long_effects, "LONGRUN_BENCH_LONG_EFFECTS")):
        if value is not None:
            os.environ[env] = str(value)
    names = [n.strip() for n in args.only.split(",")] if args.only else list(ORDER)
    for n in names:
        if n not in ORDER:
            parser.error(f"unknown benchmark {n!r}; choose from {', '.join(ORDER)}")
    info = machine()
    info["load average at start (1/5/15 min)"] = _load()
    progress(f"machine: {info['cpu']}, {info['cores']}, {info['memory']}")
    t0 = time.perf_counter()
    sections = [run_one(n) for n in names]
    total = time.perf_counter() - t0
    info["load average at end (1/5/15 min)"] = _load() + (
        "; other work on the machine slows timings and throughputs: compare figures within one run, not across runs")
    for s in sections:
        print(f"\n## {s.name}" + (f": skipped: {s.skipped}" if s.skipped else f" ({s.seconds:.1f} s)"))
        for t in s.tables:
            print()
            print(t.text())
    output = args.output or (None if args.only else str(ROOT / "BENCHMARKS.md"))
    if output:
        command = "python -m bench.run" + (f" {' '.join(argv if argv is not None else sys.argv[1:])}".rstrip())
        Path(output).write_text(markdown(sections, command.strip(), total, info) + "\n")
        progress(f"wrote {output} (total {total:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
