"""A fork in a bundle: its lineage rows, which run wrote each entry of its transcript, and the
checks that tie the lineage to the chains.

A fork's transcript is its parent's entries through the fork point, that parent's parent's
through its own fork point, and so on, then the fork's own entries, numbered on and chained on
the last inherited entry (`longrun.store.lineage`). The bundle carries those entries in the
fork's `inherited_entries.jsonl`; with its `transcript_entries.jsonl` they are one chain, each
row hashed under the run that wrote it, exactly as `Store.verify_chain` reads it. This module
says which run that must be for each entry (`writer_of`, the store's `LINEAGE_SEGMENTS` in
Python), checks the lineage rows against the fork's own `forked_from` audit event (so the audit
chain vouches for them), and, when an ancestor is in the bundle too, that the entries the fork
carries are that ancestor's very rows.

Pure: no database, no Temporal, no network.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from longrun.evidence.report import BundleReport

LINEAGE_FIELDS = {"run_id", "parent_run_id", "parent_version", "parent_through_seq", "parent_commit", "created_by",
                  "created_at"}


@dataclass(frozen=True)
class Segment:
    """`run_id` wrote the entries `lo < seq <= hi` of the transcript (hi None: no upper bound)."""

    run_id: str
    lo: int
    hi: int | None


def check_lineage(report: BundleReport, member: str, run_id: str, rows: list[tuple[int, dict[str, Any]]]) -> bool:
    """The rows are the run's lineage: its own row first, then its parent's, and so on."""
    expect = run_id
    for line, row in rows:
        if set(row) != LINEAGE_FIELDS:
            report.bad(member, line, f"has the fields {sorted(row)}, expected {sorted(LINEAGE_FIELDS)}")
            return False
        if row["run_id"] != expect:
            report.bad(member, line, f"is the lineage of run {row['run_id']!r}, expected {expect!r}: the rows must "
                       "run from this run up through its parents")
            return False
        if not isinstance(row["parent_through_seq"], int) or row["parent_through_seq"] < 0 \
                or not isinstance(row["parent_run_id"], str):
            report.bad(member, line, "parent_run_id or parent_through_seq is malformed")
            return False
        expect = row["parent_run_id"]
    report.checked["lineage rows"] += len(rows)
    return True


def segments(run_id: str, lineage: list[dict[str, Any]]) -> list[Segment]:
    """Whose entries the run's transcript holds, nearest first (`LINEAGE_SEGMENTS` of the store)."""
    out = [Segment(run_id, lineage[0]["parent_through_seq"] if lineage else 0, None)]
    for i, row in enumerate(lineage):
        hi = row["parent_through_seq"] if out[-1].hi is None else min(out[-1].hi, row["parent_through_seq"])
        lo = lineage[i + 1]["parent_through_seq"] if i + 1 < len(lineage) else 0
        out.append(Segment(row["parent_run_id"], lo, hi))
    return out


def writer_of(run_id: str, lineage: list[dict[str, Any]]) -> Callable[[int], str]:
    """Which run must have written transcript entry `seq` of `run_id` (the run itself when none)."""
    found = segments(run_id, lineage)

    def writer(seq: int) -> str:
        for seg in found:
            if seq > seg.lo and (seg.hi is None or seq <= seg.hi):
                return seg.run_id
        return run_id

    return writer


def check_forked_from(report: BundleReport, member: str, run_id: str, lineage: list[dict[str, Any]],
                      audits: list[tuple[int, dict[str, Any]]]) -> None:
    """The run's lineage row says what its (hash-chained) `forked_from` audit event says, and a
    run with either has both."""
    events = [(line, row.get("event")) for line, row in audits if row.get("kind") == "forked_from"]
    audit_member = member.rsplit("/", 1)[0] + "/audit_events.jsonl"
    if not lineage:
        if events:
            report.bad(audit_member, events[0][0], f"run {run_id} was forked (forked_from), but its run_lineage.jsonl "
                       "is empty: the lineage rows were removed")
        return
    if not events:
        report.bad(member, 1, f"says run {run_id} is a fork of {lineage[0]['parent_run_id']}, but its audit has no "
                   "forked_from event")
        return
    line, event = events[0]
    said = {k: (event or {}).get(k) for k in ("parent_run_id", "parent_version", "parent_through_seq")}
    held = {k: lineage[0][k] for k in said}
    if said != held:
        report.bad(member, 1, f"says {held}, but the forked_from audit event (audit row {line}) says {said}")


@dataclass(frozen=True)
class Inherited:
    """A fork's copy of an ancestor's entry, to compare with the ancestor's own when it is in the bundle."""

    member: str
    line: int
    run_id: str
    seq: int
    hash: str


def cross_check(report: BundleReport, inherited: list[Inherited], own: dict[tuple[str, int], tuple[str, str]]) -> None:
    """Every entry a fork carries of an ancestor that is in the bundle is that ancestor's row."""
    for e in inherited:
        theirs = own.get((e.run_id, e.seq))
        if theirs is None:
            continue
        report.checked["inherited entries (against their run's own)"] += 1
        if theirs[0] != e.hash:
            report.bad(e.member, e.line, f"entry {e.seq} of run {e.run_id} has hash {e.hash[:12]}... here but "
                       f"{theirs[0][:12]}... in {theirs[1]}: one of the two copies was rewritten")


__all__ = ["Inherited", "Segment", "check_forked_from", "check_lineage", "cross_check", "segments", "writer_of"]
