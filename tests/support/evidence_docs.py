"""A bundle checked by docs/EVIDENCE.md alone: hashlib and json, no longrun. Shared by the
real-stack bundle test and the fork bundle test, so the document is held to both."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def check_by_the_docs(files: dict[str, bytes]) -> int:
    """Every member against the manifest, every chain re-derived to its head in heads.json (a
    fork's transcript: its inherited entries, then its own, each row under the run that wrote it,
    which its run_lineage rows say); the number of chained rows checked."""
    manifest = json.loads(files["manifest.json"])
    for m in manifest["members"]:
        assert hashlib.sha256(files[m["name"]]).hexdigest() == m["sha256"] and len(files[m["name"]]) == m["size"]
    heads = json.loads(files["heads.json"])
    checked = 0

    def jsonl(name: str) -> list[dict[str, Any]]:
        return [json.loads(line) for line in files.get(name, b"").decode().splitlines()]

    for run in manifest["runs"]:
        d, run_id = run["dir"], run["run_id"]
        lineage = jsonl(f"{d}/run_lineage.jsonl")
        # whose entry each seq is: the run's own after its fork point; then each parent's
        # through the fork point below it, after its own fork point
        bounds = [(run_id, lineage[0]["parent_through_seq"] if lineage else 0, float("inf"))]
        for i, row in enumerate(lineage):
            lo = lineage[i + 1]["parent_through_seq"] if i + 1 < len(lineage) else 0
            bounds.append((row["parent_run_id"], lo, min(bounds[-1][2], row["parent_through_seq"])))
        for table in ("task_state_versions", "transcript_entries", "audit_events", "closed_items"):
            chain = jsonl(f"{d}/{table}.jsonl")
            if table == "transcript_entries":
                chain = jsonl(f"{d}/inherited_entries.jsonl") + chain
            prev = "0" * 64
            for number, row in enumerate(chain, start=1):
                assert row.get("version", row.get("seq")) == number
                writer = run_id if table != "transcript_entries" else next(
                    r for r, lo, hi in bounds if lo < number <= hi)
                assert row["run_id"] == writer, (table, number, row["run_id"], writer)
                body = {k: v for k, v in row.items() if k not in ("prev_hash", "hash")}
                assert row["prev_hash"] == prev
                prev = hashlib.sha256((prev + canonical(body)).encode()).hexdigest()
                assert prev == row["hash"]
                checked += 1
            assert prev == heads[run_id][table]["head"] and len(chain) == heads[run_id][table]["count"]
    return checked
