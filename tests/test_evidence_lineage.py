"""Evidence bundles of forks (issue 29: export x fork), on real PostgreSQL.

A fork's transcript is its parents' entries through each fork point, by reference, and its own
entries chained on the last of them (`longrun.store.lineage`). So a fork's bundle must carry the
lineage rows and the ancestors' entries it reads, and `verify-bundle` must check the chain along
the lineage as `Store.verify_chain` does. `--family` brings forks (and forks of forks) as it
brings subagents. Editing a parent's entry inside a fork's bundle is named."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path
from typing import Any

from longrun.evidence.export import export_run
from longrun.evidence.verify import verify_bundle
from longrun.models import Message, RunSpec
from longrun.models.canonical import canonical_json, chain_hash
from longrun.store import Store
from longrun.store.lineage import ForkPoint
from tests.support.evidence_docs import check_by_the_docs


def say(store: Store, run_id: str, words: str) -> int:
    return store.append_transcript(run_id, Message.user_text(words), token_estimate=5, turn=1)


def fork(store: Store, parent: str, child: str, version: int, through: int) -> None:
    state = store.state_history(parent)[version - 1].state
    store.create_fork(child, store.get_run(parent).spec, state,
                      ForkPoint(parent_run_id=parent, version=version, through_seq=through, commit=None,
                                projection_version=None), actor="tester")


def lineage(store: Store) -> None:
    """p: 5 entries; f forks p after entry 3 and adds 2; g forks f after entry 4 and adds 1."""
    store.create_run("p", RunSpec(objective="o", workspace="/tmp"), opening=Message.user_text("opening"))
    for i in range(2, 6):
        say(store, "p", f"p{i}")
    fork(store, "p", "f", 1, 3)
    say(store, "f", "f4")
    say(store, "f", "f5")
    fork(store, "f", "g", 1, 4)
    say(store, "g", "g5")
    say(store, "p", "p6")
    for run in ("p", "f", "g"):
        assert store.verify_chain(run).ok


def members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as z:
        return {i.filename: z.read(i) for i in z.infolist()}


def rewrite(path: Path, files: dict[str, bytes], *changed: str) -> Path:
    """The bundle with `changed` members' manifest entries fixed (as someone rewriting it would)."""
    manifest = json.loads(files["manifest.json"])
    for m in manifest["members"]:
        if m["name"] in changed:
            m["sha256"], m["size"] = hashlib.sha256(files[m["name"]]).hexdigest(), len(files[m["name"]])
    files["manifest.json"] = canonical_json(manifest).encode()
    with zipfile.ZipFile(path, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return path


def problems(path: Path) -> list[str]:
    return [str(p) for p in verify_bundle(str(path)).problems]


def test_a_fork_of_a_fork_exported_alone_verifies_along_its_lineage(store: Store, tmp_path: Path) -> None:
    lineage(store)
    out = tmp_path / "g.zip"
    assert export_run(store, "g", out).runs == ["g"]
    report = verify_bundle(str(out))
    assert report.ok, [str(p) for p in report.problems]
    # the whole visible transcript is checked: 3 of p's entries, 1 of f's, g's own
    assert report.checked["transcript_entries rows (hash-chained)"] == 5
    assert report.checked["lineage rows"] == 2
    # and docs/EVIDENCE.md is enough to check it without longrun
    assert check_by_the_docs(members(out)) == report.checked["transcript_entries rows (hash-chained)"] + sum(
        n for kind, n in report.checked.items() if kind.endswith("(hash-chained)") and "transcript" not in kind)


def test_family_from_the_original_holds_its_forks_and_verifies(store: Store, tmp_path: Path) -> None:
    lineage(store)
    store.create_run("p-sub", RunSpec(objective="a subagent", workspace="/tmp"), parent_run_id="p")
    out = tmp_path / "family.zip"
    done = export_run(store, "p", out, with_family=True)
    assert done.runs == ["p", "f", "p-sub", "g"] or sorted(done.runs) == ["f", "g", "p", "p-sub"], done.runs
    report = verify_bundle(str(out))
    assert report.ok, [str(p) for p in report.problems]
    assert report.checked["inherited entries (against their run's own)"] == 3 + 4
    assert check_by_the_docs(members(out)) > 0
    manifest = json.loads(members(out)["manifest.json"])
    listed = {r["run_id"]: r for r in manifest["runs"]}
    assert set(listed) == {"p", "f", "g", "p-sub"}
    assert listed["f"]["forked_from"] == {"run_id": "p", "version": 1, "through_seq": 3}
    assert listed["g"]["forked_from"] == {"run_id": "f", "version": 1, "through_seq": 4}
    assert listed["p"]["forked_from"] is None and listed["p-sub"]["parent_run_id"] == "p"
    alone = export_run(store, "p", tmp_path / "p.zip")
    assert alone.runs == ["p"], "without --family a run's forks stay out"


def test_editing_a_parents_entry_inside_a_forks_bundle_is_named(store: Store, tmp_path: Path) -> None:
    lineage(store)
    out = tmp_path / "g.zip"
    export_run(store, "g", out)
    files = members(out)
    member = "runs/g/inherited_entries.jsonl"
    rows = [json.loads(line) for line in files[member].decode().splitlines()]
    assert [(r["run_id"], r["seq"]) for r in rows] == [("p", 1), ("p", 2), ("p", 3), ("f", 4)]
    rows[1]["content"] = {"role": "user", "content": "edited"}
    files[member] = b"".join(canonical_json(r).encode() + b"\n" for r in rows)
    found = problems(rewrite(tmp_path / "edited.zip", files, member))
    assert any(p.startswith(f"{member} row 2: content does not match its stored hash") for p in found), found

    # rechained too (and the fork's own entry and the heads): the parent's copy in a family bundle still disagrees
    family = tmp_path / "family.zip"
    export_run(store, "p", family, with_family=True)
    files = members(family)
    rows = [json.loads(line) for line in files["runs/f/inherited_entries.jsonl"].decode().splitlines()]
    own = [json.loads(line) for line in files["runs/f/transcript_entries.jsonl"].decode().splitlines()]
    rows[1]["content"] = {"role": "user", "content": "edited"}
    prev = "0" * 64
    for r in rows + own:
        r["prev_hash"] = prev
        r["hash"] = prev = chain_hash(prev, {k: v for k, v in r.items() if k not in ("prev_hash", "hash")})
    files["runs/f/inherited_entries.jsonl"] = b"".join(canonical_json(r).encode() + b"\n" for r in rows)
    files["runs/f/transcript_entries.jsonl"] = b"".join(canonical_json(r).encode() + b"\n" for r in own)
    heads: dict[str, Any] = json.loads(files["heads.json"])
    heads["f"]["transcript_entries"]["head"] = prev
    files["heads.json"] = canonical_json(heads).encode()
    found = problems(rewrite(tmp_path / "rechained.zip", files, "runs/f/inherited_entries.jsonl",
                             "runs/f/transcript_entries.jsonl", "heads.json"))
    assert any(p.startswith("runs/f/inherited_entries.jsonl row 2:") and "run p" in p for p in found), found


def test_a_rewritten_or_removed_lineage_is_named(store: Store, tmp_path: Path) -> None:
    lineage(store)
    out = tmp_path / "f.zip"
    export_run(store, "f", out)
    files = members(out)
    member = "runs/f/run_lineage.jsonl"
    row = json.loads(files[member])
    row["parent_through_seq"] = 2  # claim the fork read less of its parent
    files[member] = canonical_json(row).encode() + b"\n"
    found = problems(rewrite(tmp_path / "moved.zip", files, member))
    assert any(p.startswith(f"{member} row 1: says") and "forked_from audit event" in p for p in found), found

    files = members(out)
    files[member] = files["runs/f/inherited_entries.jsonl"] = b""  # pass the fork off as a run of its own
    found = problems(rewrite(tmp_path / "cut.zip", files, member, "runs/f/inherited_entries.jsonl"))
    assert any(p.startswith("runs/f/transcript_entries.jsonl row 1: row 1 is missing") for p in found), found
    assert any(p.startswith("runs/f/audit_events.jsonl row 2: run f was forked") for p in found), found
