"""A bundle's runs checked: every hash chain against its head, every row's fields, and every
signed decision (through `audit --verify`'s own checks, `longrun.auth.audit_check`).

A chained row is its hashed payload plus `prev_hash` and `hash`. The payload is rebuilt here with
the store's own payload functions (`longrun.models.chain`) from the row's fields, so a row with a
field added, dropped or written differently does not verify, and the chain is checked in the
order the rows appear in the member (a reordered row is a broken link).

A fork's transcript chain starts with the ancestors' entries it reads by reference (its
`inherited_entries.jsonl`) and goes on with its own; `longrun.evidence.lineage` says which run
wrote each entry, and each is hashed under that run, as `Store.verify_chain` does.

Pure: no database, no Temporal, no network.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from longrun.auth.audit_check import verify_decisions
from longrun.evidence import bundle as fmt
from longrun.evidence.bundle import BundleReader
from longrun.evidence.lineage import Inherited, check_forked_from, check_lineage, writer_of
from longrun.evidence.report import BundleReport
from longrun.evidence.source import BundleSource, audit_row, state_row, when
from longrun.models.chain import (
    ChainRow,
    audit_payload,
    check_chain,
    closed_item_payload,
    state_version_payload,
    transcript_payload,
)
from longrun.models.tombstone import tombstone_of


def _at(row: dict[str, Any]) -> Any:
    return when(row["created_at"])


PAYLOADS: dict[str, tuple[str, Callable[[str, dict[str, Any]], dict[str, Any]]]] = {
    "task_state_versions": ("version", lambda rid, r: state_version_payload(
        rid, r["version"], r["state"], r["actor"], r["reason"], _at(r))),
    "transcript_entries": ("seq", lambda rid, r: transcript_payload(
        rid, r["seq"], r["role"], r["content"], r["token_estimate"], r["usage"], r["turn"], _at(r))),
    "audit_events": ("seq", lambda rid, r: audit_payload(rid, r["seq"], r["kind"], r["event"], r["actor"], _at(r))),
    "closed_items": ("seq", lambda rid, r: closed_item_payload(
        rid, r["seq"], r["kind"], r["item_id"], r["action_hash"], r["call_ref"], r["item"], r["state_version"], _at(r))),
}
"""Per chained table: the row's number field, and how its hashed payload is rebuilt."""


def read_rows(reader: BundleReader, report: BundleReport, member: str) -> list[tuple[int, dict[str, Any]]] | None:
    """The member's rows (objects), or None when it is missing or unreadable (a finding says why)."""
    if not reader.has(member):
        report.bad(member, None, "missing from the bundle: a run's members are all written, even when empty")
        return None
    try:
        rows = list(reader.rows(member))
    except (ValueError, fmt.BundleError) as exc:
        report.bad(member, None, str(exc))
        return None
    out = []
    for number, row in rows:
        if not isinstance(row, dict):
            report.bad(member, number, "is not a JSON object")
            return None
        out.append((number, row))
    return out


Rows = list[tuple[int, dict[str, Any]]]


def _chain(report: BundleReport, member: str, table: str, run_id: str, rows: Rows, head: dict[str, Any], *,
           inherited: Rows | None = None, inherited_member: str = "", writer: Callable[[int], str] | None = None,
           tombstones: list[int] | None = None) -> bool:
    """Check one chain: `inherited` rows (a fork's ancestors' entries, from `inherited_member`)
    then `rows`, each hashed under the run `writer` says wrote it (default: `run_id`). The lines
    of the run's own pruned entries (tombstones) are appended to `tombstones`."""
    tombstones = tombstones if tombstones is not None else []
    number_field, payload_of = PAYLOADS[table]
    inherited = inherited or []
    located = [(inherited_member, line, row) for line, row in inherited] + [(member, line, row) for line, row in rows]
    chain = []
    for where, line, row in located:
        try:
            owner = writer(int(row[number_field])) if writer else run_id
            if row.get("run_id") != owner:
                raise ValueError(f"belongs to run {row.get('run_id')!r}, not {owner!r}"
                                 + (f" (the run whose entry {row[number_field]} {run_id}'s lineage reads)"
                                    if owner != run_id else ""))
            payload = payload_of(owner, row)
            if set(row) != set(payload) | {"prev_hash", "hash"}:
                raise ValueError(f"has the fields {sorted(row)}, expected {sorted(set(payload) | {'prev_hash', 'hash'})}")
            pruned = table == "transcript_entries" and tombstone_of(row.get("content")) is not None
            if pruned and owner == run_id:
                # a pruned body: its hash is vouched for by the next row or the head, as in
                # `audit --verify`; the run's own tombstones are weighed against its audited prunes
                tombstones.append(line)
            chain.append(ChainRow(int(row[number_field]), None if pruned else payload, str(row["prev_hash"]),
                                  str(row["hash"])))
        except (KeyError, TypeError, ValueError) as exc:
            report.bad(where, line, f"malformed row: {exc}")
            return False
    try:
        problem = check_chain(chain, str(head["head"]), int(head["count"]))
    except (KeyError, TypeError, ValueError) as exc:
        report.bad(fmt.HEADS, None, f"no head for {table} of run {run_id}: {exc}")
        return False
    report.checked[f"{table} rows (hash-chained)"] += len(chain)
    if problem is not None:
        if 0 < problem.row <= len(located):
            report.bad(located[problem.row - 1][0], located[problem.row - 1][1], problem.reason)
        else:
            report.bad(member, problem.row - len(inherited), problem.reason)
        return False
    return True


def _lineage(reader: BundleReader, report: BundleReport, folder: str, run_id: str,
             version: Any) -> tuple[Rows | None, Rows]:
    """The run's lineage rows (None: they are not a lineage, a finding says why) and inherited
    entries (both empty for a run that is no fork, or a version 1 bundle, which has neither member)."""
    found: list[Rows] = []
    for name in (fmt.LINEAGE, fmt.INHERITED):
        member = f"{folder}/{name}.jsonl"
        rows = read_rows(reader, report, member) if reader.has(member) or version != 1 else []
        found.append(rows or [])
    lineage, inherited = found
    if not check_lineage(report, f"{folder}/{fmt.LINEAGE}.jsonl", run_id, lineage):
        return None, inherited
    return lineage, inherited


_WHERE = re.compile(r"^(audit row|state version) (\d+)")


def check_run(reader: BundleReader, report: BundleReport, run_id: str, folder: str, heads: dict[str, Any],
              source: BundleSource, version: Any = fmt.FORMAT_VERSION) -> None:
    """Check one run's members; add its rows to `source` for the decision checks and the
    lineage's cross-check."""
    run_heads = heads.get(run_id)
    if not isinstance(run_heads, dict):
        report.bad(fmt.HEADS, None, f"has no heads for run {run_id}")
        run_heads = {}
    lineage_rows, inherited = _lineage(reader, report, folder, run_id, version)
    lineage = [row for _line, row in lineage_rows or []]
    inherited_member = f"{folder}/{fmt.INHERITED}.jsonl"
    rows: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    tombstones: list[int] = []
    for table in fmt.RUN_TABLES:
        member = f"{folder}/{table}.jsonl"
        found = read_rows(reader, report, member)
        if found is None:
            continue
        rows[table] = found
        if table == "transcript_entries":
            _chain(report, member, table, run_id, found, run_heads.get(table) or {"head": "", "count": -1},
                   inherited=inherited, inherited_member=inherited_member, writer=writer_of(run_id, lineage),
                   tombstones=tombstones)
            source.entries.update({(run_id, r["seq"]): (str(r.get("hash")), member) for _l, r in found
                                   if isinstance(r.get("seq"), int)})
            source.inherited.extend(Inherited(inherited_member, line, str(r.get("run_id")), r["seq"], str(r.get("hash")))
                                    for line, r in inherited if isinstance(r.get("seq"), int))
        elif table in PAYLOADS:
            _chain(report, member, table, run_id, found, run_heads.get(table) or {"head": "", "count": -1})
        else:
            for line, row in found:
                if row.get("run_id") != run_id:
                    report.bad(member, line, f"belongs to run {row.get('run_id')!r}, not {run_id!r}")
            report.checked[f"{table} rows (manifest only)"] += len(found)
    if not reader.has(f"{folder}/run.json"):
        report.bad(f"{folder}/run.json", None, "missing from the bundle")
    _closed_head(report, folder, run_id, rows.get("task_state_versions", []), run_heads)
    _pruned(report, folder, tombstones, rows.get("audit_events", []))
    if lineage_rows is not None and (lineage_rows or version != 1):
        check_forked_from(report, f"{folder}/{fmt.LINEAGE}.jsonl", run_id, lineage, rows.get("audit_events", []))
    _load(report, folder, run_id, rows, source)


def _pruned(report: BundleReport, folder: str, tombstones: list[int], audits: Rows) -> None:
    """A pruned run's bundle verifies as `audit --verify` does: its tombstones (pruned bodies) must
    be as many as its hash-chained `retention` (`prune`) audit events say were removed."""
    audited = 0
    for _line, row in audits:
        event = row.get("event")
        if row.get("kind") == "retention" and isinstance(event, dict) and event.get("action") == "prune":
            pruned = event.get("pruned")
            audited += int(pruned.get("transcript_entries", 0)) if isinstance(pruned, dict) else 0
    if tombstones or audited:
        report.checked["transcript_entries bodies pruned (tombstones)"] += len(tombstones)
    if len(tombstones) != audited:
        report.bad(f"{folder}/transcript_entries.jsonl", tombstones[0] if tombstones else None,
                   f"{len(tombstones)} entries are tombstones (pruned bodies) but the audit records {audited} "
                   "pruned: a body was removed outside `longrun prune`")


def _closed_head(report: BundleReport, folder: str, run_id: str, versions: list[tuple[int, dict[str, Any]]],
                 heads: dict[str, Any]) -> None:
    """The closed items' count and head are kept in the (hash-chained) state: the last version's must
    be the head the chain was checked against."""
    if not versions:
        return
    line, last = versions[-1]
    state = last.get("state")
    closed = state.get("closed") if isinstance(state, dict) else None
    closed = closed if isinstance(closed, dict) else {}
    held = (closed.get("count", 0), closed.get("head") or "0" * 64)
    given = heads.get("closed_items")
    given = given if isinstance(given, dict) else {}
    if (given.get("count"), given.get("head")) != held:
        report.bad(f"{folder}/task_state_versions.jsonl", line,
                   f"the state holds {held[0]} closed items with head {str(held[1])[:12]}..., but heads.json says "
                   f"{given.get('count')} with head {str(given.get('head'))[:12]}...")


def _load(report: BundleReport, folder: str, run_id: str, rows: dict[str, list[tuple[int, dict[str, Any]]]],
          source: BundleSource) -> None:
    """Parse the run's audit rows, state versions and edits into `source`, then check its decisions."""
    for table, parse, into in (("audit_events", audit_row, source.audits), ("task_state_versions", state_row,
                                                                             source.states)):
        parsed = []
        for line, row in rows.get(table, []):
            try:
                parsed.append(parse(row))
            except (KeyError, TypeError, ValueError, ValidationError) as exc:
                report.bad(f"{folder}/{table}.jsonl", line, f"does not parse: {str(exc).splitlines()[0]}")
        into[run_id] = parsed  # type: ignore[assignment]
    source.edits[run_id] = {int(r["edit_id"]): r for _line, r in rows.get("call_edits", []) if "edit_id" in r}
    try:
        decisions = verify_decisions(source, run_id)
    except Exception as exc:  # a hostile bundle must get a finding, never a traceback
        report.bad(f"{folder}/audit_events.jsonl", None, f"the decision checks could not run: {exc!r}")
        return
    report.checked["signed decisions"] += decisions.checked
    for p in decisions.problems:
        m = _WHERE.match(p.where)
        table = "audit_events" if m and m.group(1) == "audit row" else "task_state_versions"
        report.bad(f"{folder}/{table}.jsonl", int(m.group(2)) if m else None, f"{p.where}: {p.reason}")


__all__ = ["PAYLOADS", "check_run", "read_rows"]
