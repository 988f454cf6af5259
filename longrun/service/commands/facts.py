"""`longrun facts RUN [--kind K] [--subject S] [--all] [--json]`: the run's fact store, and which of
its current facts the last compaction left out of what the model sees.

A compaction shows only the current facts its budget fits (issue 25); the others are kept, one
`recall` away. To say which were left out, each current row's text is looked for in the last
projection (its summary, the fact ledger included, and its messages): a fact is rendered verbatim
(`ledger.Entry.render`), so a row whose text is not there was not shown. Both sides are stored
redacted the same way, so a redacted secret does not make a shown fact look left out. Rows read
after the last projection (none today: a compaction adds rows with its projection) show as `new`.

Reads PostgreSQL only; Temporal need not run.
"""

from __future__ import annotations

import argparse
from typing import Any

from longrun.context.factstore import FactStore
from longrun.models.blocks import TextBlock
from longrun.models.context import FactRow, Projection
from longrun.service.commands.common import EXIT_OK, add_json, open_store_only, print_json, say
from longrun.tools.recall import replacements

KINDS = ("rule", "decision", "value", "status", "preference")


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "facts", help="list the run's fact store and which current facts the last compaction left out",
        description="List the run's fact store: the current facts by default (--all adds the superseded ones, "
        "marked), each with its kind, who said it, the transcript entry it came from, and whether the last "
        "projection showed it or LEFT OUT (the model can still recall it). Reads PostgreSQL only.",
    )
    p.add_argument("run", help="run id")
    p.add_argument("--kind", choices=KINDS, help="only facts of this kind")
    p.add_argument("--subject", help="only facts whose subject, value or text hold every one of these words")
    p.add_argument("--all", action="store_true", help="include superseded facts, marked with what replaced them")
    add_json(p)
    p.set_defaults(func=cmd_facts)


def projection_text(projection: Projection) -> str:
    """Everything the projection shows the model: its summary and its messages' text."""
    parts = [projection.summary or ""]
    parts += [b.text for m in projection.messages for b in m.content if isinstance(b, TextBlock)]
    return "\n".join(parts)


def shown_status(row: FactRow, projection: Projection | None, text: str) -> str:
    """`shown`, `left out`, `new` (read after the projection) or `no projection`."""
    if projection is None:
        return "no projection"
    if row.source_seq > projection.covers_through_seq:
        return "new"
    return "shown" if " ".join(row.text.split()) in text else "left out"


def cmd_facts(args: argparse.Namespace) -> int:
    store = open_store_only()
    try:
        rows = store.facts(args.run)
        projection = store.latest_projection(args.run)
    finally:
        store.engine.dispose()
    fs = FactStore(rows)
    gone = replacements(fs)
    picked = fs.recall(args.subject or "", kind=args.kind, include_superseded=args.all)
    picked.sort(key=lambda r: r.seq)
    text = " ".join(projection_text(projection).split()) if projection else ""
    listed = []
    for r in picked:
        current = not fs.superseded(r)
        listed.append({**r.model_dump(mode="json"), "status": "current" if current else "superseded",
                       "superseded_by": gone.get(r.seq),
                       "last_projection": shown_status(r, projection, text) if current else None})
    left = sum(1 for f in listed if f["last_projection"] == "left out")
    if args.json:
        print_json({"run_id": args.run, "projection_version": projection.version if projection else None,
                    "current": len(fs.current()), "total": len(rows), "left_out": left, "facts": listed})
        return EXIT_OK
    head = f"run {args.run}: {len(fs.current())} current fact(s), {len(rows) - len(fs.current())} superseded"
    head += (f"; of those listed, the last projection (v{projection.version}) left out {left} "
             "(the model can recall them)") if projection else "; no compaction yet"
    say(head)
    if not listed:
        say("no fact matches" if rows else "the store is empty (facts are read at each compaction)")
    for f in listed:
        mark = f"superseded by {f['superseded_by']}" if f["status"] == "superseded" else f["last_projection"].upper() \
            if f["last_projection"] == "left out" else f["last_projection"]
        say(f"{f['seq']:>5}  {f['kind']:<10} {f['source']:<5} seq {f['source_seq']:<6} {mark:<16} {f['text']}")
    return EXIT_OK
