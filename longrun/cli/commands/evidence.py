"""`longrun export` (a run's record into an evidence bundle) and `longrun verify-bundle` (a
bundle checked from the file alone: no database, no Temporal, no network)."""

from __future__ import annotations

import argparse

from longrun.cli.commands.common import EXIT_OK, open_store_only, print_json, say


def cmd_export(args: argparse.Namespace) -> int:
    from longrun.auth.keys import Signer
    from longrun.evidence.export import export_run

    signer = Signer.load(args.sign_as, args.key) if args.sign_as else None
    store = open_store_only()
    try:
        done = export_run(store, args.run, args.output, with_artifacts=args.with_artifacts,
                          with_family=args.family, signer=signer)
    finally:
        store.engine.dispose()
    if args.json:
        print_json({"path": str(done.path), "runs": done.runs, "members": done.members, "artifacts": done.artifacts,
                    "signed_by": done.signed_by, "heads": done.heads})
    else:
        say(f"wrote {done.path}: {len(done.runs)} run(s), {done.members} members"
            + (f", {done.artifacts} artifacts" if done.artifacts else "")
            + (f", signed by {done.signed_by}" if done.signed_by else ", not signed (--sign-as NAME signs it)"))
        say(f"check it anywhere with: longrun verify-bundle {done.path}")
    return EXIT_OK


def cmd_verify_bundle(args: argparse.Namespace) -> int:
    from longrun.evidence.verify import run

    return run(args)
