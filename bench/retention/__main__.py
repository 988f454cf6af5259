"""`python -m bench.retention`: the retention tables, for iterating on the compaction pipeline.

    .venv/bin/python -m bench.retention                          # both shapes, 25% and 66%, report seeds
    .venv/bin/python -m bench.retention --shape sparse --share 0.25 --seeds 3 --method extractive --dev
    .venv/bin/python -m bench.retention --dev --dump /tmp/ret      # + JSONL, state, projection, missed probes
    .venv/bin/python -m bench.retention --against ca2e987          # longrun/ as of a git revision

`--dev` uses the seeds meant for iteration (9001...); without it, the report seeds (5001...) that
BENCHMARKS.md uses, so reported figures are on conversations nobody tuned on. `--against REV`
runs the same benchmark (this checkout's bench/) with `longrun/` exported from REV with `git
archive`, to compare a change with what came before.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.retention.generate import SHAPES
from bench.retention.methods import METHODS

ROOT = Path(__file__).resolve().parents[2]
BOOT = (
    "import sys; src = sys.argv[1]; "
    "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f).lower()]; "
    "sys.path[:0] = [src, sys.argv[2]]; import longrun.context; "
    "assert longrun.context.__file__.startswith(src), longrun.context.__file__; "
    "from bench.retention.__main__ import main; sys.exit(main(sys.argv[3:]))"
)


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.retention", description=__doc__.splitlines()[0])
    p.add_argument("--shape", choices=(*SHAPES, "all"), default="all")
    p.add_argument("--share", type=float, action="append", help="share of the transcript's tokens (repeatable; "
                   "default 0.25 and 0.66)")
    p.add_argument("--seeds", type=int, default=None, help="conversations per shape (default 6)")
    p.add_argument("--method", choices=(*METHODS, "all"), default="all",
                   help="one method, or all (the no-compaction control, the naive floor, extractive, model)")
    p.add_argument("--dev", action="store_true", help="the iteration seeds (9001...) instead of the report seeds")
    p.add_argument("--dump", type=Path, help="write each conversation, its state, projections and missed probes here")
    p.add_argument("--against", metavar="REV", help="use longrun/ from this git revision (git archive)")
    args = p.parse_args(argv)
    if any(not 0 < s <= 1 for s in args.share or []):
        p.error("--share must be in (0, 1]")
    if args.seeds is not None and args.seeds < 1:
        p.error("--seeds must be at least 1")
    return args


def against(rev: str, argv: list[str]) -> int:
    """Re-run this command with longrun/ exported from `rev`."""
    rest = [a for i, a in enumerate(argv) if a != "--against" and (i == 0 or argv[i - 1] != "--against")
            and not a.startswith("--against=")]
    with tempfile.TemporaryDirectory(prefix="longrun-at-") as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "longrun"], capture_output=True, check=False)
        if archive.returncode != 0:
            print(f"bench.retention: git archive {rev}: {archive.stderr.decode().strip()}", file=sys.stderr)
            return 2
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        print(f"bench.retention: longrun/ from {rev}", file=sys.stderr)
        env = {**os.environ, "PYTHONPATH": ""}
        return subprocess.run([sys.executable, "-c", BOOT, tmp, str(ROOT), *rest], env=env, check=False).returncode


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse(argv)
    if args.against:
        return against(args.against, argv)
    from bench.retention.run import DEFAULT_SEEDS, SHARES, run

    methods = METHODS if args.method == "all" else (args.method,)
    section = run(seeds=args.seeds or DEFAULT_SEEDS, shapes=SHAPES if args.shape == "all" else (args.shape,),
                  shares=tuple(args.share or SHARES), methods=methods, dev=args.dev, dump=args.dump)
    for t in section.tables:
        print()
        print(t.text())
    print(f"\n({section.seconds:.1f} s)")
    if args.dump:
        print(f"dumped to {args.dump}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
