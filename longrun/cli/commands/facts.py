"""`longrun facts RUN [--kind K] [--subject S] [--all] [--json]`: the run's fact store, and which of
its current facts the last compaction left out of what the model sees.

What it lists, and how "left out" is decided, is `longrun.context.list_facts` (the console's run
page shows the same). Reads PostgreSQL only; Temporal need not run.
"""

from __future__ import annotations

import argparse

from longrun.cli.commands.common import EXIT_OK, open_store_only, print_json, say
from longrun.context import list_facts


def cmd_facts(args: argparse.Namespace) -> int:
    store = open_store_only()
    try:
        rows = store.facts(args.run)
        projection = store.latest_projection(args.run)
    finally:
        store.engine.dispose()
    listing = list_facts(rows, projection, query=args.subject or "", kind=args.kind, include_superseded=args.all)
    listed = [f.as_dict() for f in listing.facts]
    left = listing.left_out
    if args.json:
        print_json({"run_id": args.run, "projection_version": listing.projection_version,
                    "current": listing.current, "total": listing.total, "left_out": left, "facts": listed})
        return EXIT_OK
    head = f"run {args.run}: {listing.current} current fact(s), {listing.total - listing.current} superseded"
    head += (f"; of those listed, the last projection (v{listing.projection_version}) left out {left} "
             "(the model can recall them)") if projection else "; no compaction yet"
    say(head)
    if not listed:
        say("no fact matches" if rows else "the store is empty (facts are read at each compaction)")
    for f in listed:
        mark = f"superseded by {f['superseded_by']}" if f["status"] == "superseded" else f["last_projection"].upper() \
            if f["last_projection"] == "left out" else f["last_projection"]
        say(f"{f['seq']:>5}  {f['kind']:<10} {f['source']:<5} seq {f['source_seq']:<6} {mark:<16} {f['text']}")
    return EXIT_OK
