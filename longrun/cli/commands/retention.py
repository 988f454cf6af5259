"""`longrun prune` (the bodies of finished runs go, their proofs stay) and `longrun pin` / `unpin`.

`prune` needs the schema owner's database URL (`LONGRUN_OWNER_DATABASE_URL`, else the dev
stack's): the app role may not UPDATE the history tables. Each run is pruned in its own
transaction (`longrun.store.retention`), so an interrupted prune leaves every run whole or pruned;
running it again finishes the job. What is kept, and how this sits beside Temporal's own history
retention: docs/OPERATIONS.md, "Retention".
"""

from __future__ import annotations

import argparse
import getpass
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from longrun import render
from longrun.cli.commands.common import (
    EXIT_FAIL,
    EXIT_OK,
    CliError,
    open_store_only,
    print_json,
    say,
    settings,
    usage_error,
)
from longrun.errors import StoreError
from longrun.store import InvalidInputError, Store, make_engine
from longrun.store.retention import PruneCandidate

OWNER_HINT = ("pruning needs the schema owner's database URL (the app role may not change history): set "
              "LONGRUN_OWNER_DATABASE_URL, or run this where `longrun dev up` wrote $LONGRUN_HOME/stack.json")

BeforePrune = Callable[[str], None]
"""Called with a run id before that run is pruned; raising keeps the run whole (reported, exit 1)."""


def before_prune(args: argparse.Namespace) -> BeforePrune | None:
    """The one place that decides what must succeed before each run is pruned: with `--export-to
    DIR`, the run's evidence bundle (`DIR/RUN.zip`, artifacts' bytes included) is written and
    verified from the file alone; a failure raises, so that run is kept whole and the command
    exits 1. A bundle already there (a prune interrupted after the export) is verified and kept."""
    if args.export_to is None:
        return None
    folder = Path(args.export_to)

    def export_then_verify(run_id: str) -> None:
        from longrun.evidence.export import export_run
        from longrun.evidence.verify import verify_bundle

        path = folder / f"{run_id}.zip"
        if not path.exists():
            store = open_store_only()
            try:
                export_run(store, run_id, path, with_artifacts=True)
            finally:
                store.engine.dispose()
        report = verify_bundle(str(path))
        if not report.ok:
            raise CliError(f"the bundle {path} does not verify ({'; '.join(str(p) for p in report.problems[:3])}); "
                           "move it away and run prune again to export it anew")

    return export_then_verify


def cutoff(args: argparse.Namespace, now: datetime) -> datetime:
    """The finish time before which runs are pruned, from `--finished-before` or `--older-than`.

    Raises:
        CliError: (usage) a date or duration that does not parse, or a cutoff in the future."""
    if args.older_than is not None:
        try:
            return now - timedelta(seconds=render.parse_duration(args.older_than))
        except ValueError as exc:
            raise usage_error(f"--older-than: {exc}") from exc
    try:
        when = datetime.fromisoformat(args.finished_before)
    except ValueError as exc:
        raise usage_error(f"--finished-before: {args.finished_before!r} is not a date; use YYYY-MM-DD or an ISO "
                          "8601 time") from exc
    when = when if when.tzinfo is not None else when.replace(tzinfo=UTC)
    if when > now:
        raise usage_error(f"--finished-before {args.finished_before} is in the future: give a past date")
    return when


def _owner_store() -> Store:
    url = settings().owner_database_url
    if not url:
        raise CliError(f"no database configured; {OWNER_HINT}")
    return Store(make_engine(url))


def _owner_error(exc: StoreError) -> CliError:
    text = str(exc)
    hint = f"; {OWNER_HINT}" if "permission denied" in text or "42501" in text else ""
    return CliError(f"{text}{hint}")


def _row(c: PruneCandidate) -> list[Any]:
    return [c.run_id, c.status, render.when(c.finished_at), c.bodies.get("transcript_entries", 0),
            c.bodies.get("projections", 0) + c.bodies.get("facts", 0), c.bodies.get("artifacts", 0),
            f"{c.bytes_freed:,}"]


def cmd_prune(args: argparse.Namespace) -> int:
    now = datetime.now(UTC)
    before = cutoff(args, now)
    hook = before_prune(args)
    actor = f"cli:{getpass.getuser()}"
    store = _owner_store()
    results: list[dict[str, Any]] = []
    try:
        candidates = store.prune_candidates(before, limit=args.limit)
        if args.dry_run:
            return _report_dry_run(args, before, candidates)
        failed = 0
        for c in candidates:
            try:
                if hook is not None:
                    hook(c.run_id)
            except Exception as exc:  # whatever the hook raised keeps this run whole
                failed += 1
                results.append({"run_id": c.run_id, "pruned": False, "reason": f"before-prune step failed: {exc}"})
                if not args.json:
                    say(f"kept {c.run_id}: the before-prune step failed ({exc}); nothing of it was pruned")
                continue
            outcome = store.prune_run(c.run_id, before, actor=actor)
            results.append({"run_id": c.run_id, "pruned": outcome.pruned, "reason": outcome.reason,
                            "bodies": outcome.bodies, "bytes_freed": outcome.bytes_freed})
            if not args.json:
                say(f"pruned {c.run_id}: {', '.join(f'{n} {t}' for t, n in outcome.bodies.items())}; "
                    f"{outcome.bytes_freed:,} bytes freed" if outcome.pruned else f"kept {c.run_id}: {outcome.reason}")
    except StoreError as exc:
        raise _owner_error(exc) from exc
    finally:
        store.engine.dispose()
    freed = sum(int(r.get("bytes_freed", 0)) for r in results)
    pruned = sum(1 for r in results if r["pruned"])
    if args.json:
        print_json({"finished_before": before.isoformat(), "dry_run": False, "runs": results, "pruned": pruned,
                    "bytes_freed": freed})
    else:
        say(f"{pruned} run(s) pruned, {freed:,} bytes freed (finished before {before.isoformat()}); "
            "`longrun audit RUN --verify` still verifies each")
    return EXIT_FAIL if failed else EXIT_OK


def _report_dry_run(args: argparse.Namespace, before: datetime, candidates: list[PruneCandidate]) -> int:
    freed = sum(c.bytes_freed for c in candidates)
    if args.json:
        print_json({"finished_before": before.isoformat(), "dry_run": True, "bytes_freed": freed,
                    "runs": [{"run_id": c.run_id, "status": c.status, "finished_at": c.finished_at.isoformat(),
                              "bodies": c.bodies, "bytes": c.bytes, "bytes_freed": c.bytes_freed}
                             for c in candidates]})
        return EXIT_OK
    if not candidates:
        say(f"nothing to prune: no unpinned run finished before {before.isoformat()} still has its bodies")
        return EXIT_OK
    say(render.table([_row(c) for c in candidates],
                     ["run", "status", "finished", "transcript", "projections+facts", "artifacts", "bytes"]))
    say(f"dry run: {len(candidates)} run(s) would be pruned, {freed:,} bytes freed; nothing was changed")
    return EXIT_OK


def cmd_pin(args: argparse.Namespace) -> int:
    store = open_store_only()
    try:
        changed = store.set_pinned(args.run, args.pinned, actor=f"cli:{getpass.getuser()}")
    except InvalidInputError as exc:
        raise CliError(str(exc)) from exc
    finally:
        store.engine.dispose()
    word = "pinned" if args.pinned else "unpinned"
    if args.json:
        print_json({"run_id": args.run, "pinned": args.pinned, "changed": changed})
    else:
        say(f"run {args.run} {word}" + ("" if changed else " already (nothing changed)")
            + (": `longrun prune` will not take it" if args.pinned else ""))
    return EXIT_OK
