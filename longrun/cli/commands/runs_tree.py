"""`longrun runs --tree`: runs as a family tree, forks (`run_lineage`) and subagents
(`runs.parent_run_id`) under the run they came from."""

from __future__ import annotations

from longrun import render
from longrun.store import Store
from longrun.store.records import RunRecord


def tree_lines(store: Store, runs: list[RunRecord]) -> list[str]:
    """One line per run, newest family first; a fork or subagent is indented under its parent
    (a parent outside `runs` is named on the child's line instead)."""
    ids = {r.run_id for r in runs}
    lineage = {rec.run_id: rec for rec in store.lineage_among(sorted(ids)) if rec.run_id in ids}
    parent: dict[str, str] = {}
    how: dict[str, str] = {}
    for r in runs:
        if r.run_id in lineage:
            rec = lineage[r.run_id]
            parent[r.run_id], how[r.run_id] = rec.parent_run_id, f"fork at v{rec.parent_version} of"
        elif r.parent_run_id:
            parent[r.run_id], how[r.run_id] = r.parent_run_id, "subagent of"
    children: dict[str, list[RunRecord]] = {}
    for r in sorted(runs, key=lambda x: x.created_at):
        if parent.get(r.run_id) in ids:
            children.setdefault(parent[r.run_id], []).append(r)
    lines: list[str] = []

    def walk(r: RunRecord, prefix: str, branch: str) -> None:
        kind = how.get(r.run_id, "")
        origin = f"  ({kind} {parent[r.run_id]})" if kind and parent[r.run_id] not in ids else (
            f"  ({kind.rsplit(' ', 1)[0]})" if kind else "")
        lines.append(f"{prefix}{branch}{r.run_id}  {r.status}  {render.when(r.created_at)}  "
                     f"{r.spec.objective[:60]}{origin}")
        kids = children.get(r.run_id, [])
        inner = prefix + ("" if not branch else "   " if branch == "└─ " else "│  ")
        for i, kid in enumerate(kids):
            walk(kid, inner, "└─ " if i == len(kids) - 1 else "├─ ")

    for r in runs:  # newest first, as `runs` lists them
        if parent.get(r.run_id) not in ids:
            walk(r, "", "")
    return lines


def lineage_lines(store: Store, run_id: str) -> list[str]:
    """What `status` says of a run's family: the run it was forked from, and its forks."""
    lines = []
    point = store.lineage(run_id)
    if point is not None:
        on = f", branch from {point.parent_commit[:12]}" if point.parent_commit else ""
        lines.append(f"forked from {point.parent_run_id} at state v{point.parent_version} (transcript through entry "
                     f"{point.parent_through_seq}{on})")
    forks = store.forks(run_id)
    if forks:
        lines.append("forks: " + ", ".join(f"{f.run_id} (at v{f.parent_version})" for f in forks))
    return lines
