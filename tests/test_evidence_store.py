"""`export_run` against a real PostgreSQL with a row in every append-only table (the chain test's
history: a closed item, a projection and its fact, an instruction, an artifact, a tool list) and a
subagent: `--family` brings the child, `--with-artifacts` the bytes, and the bundle verifies; a
cut chain tail (the last row dropped, the manifest fixed) is named."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import pytest

from longrun.errors import RunNotFoundError, StoreError
from longrun.evidence.export import export_run
from longrun.evidence.verify import verify_bundle
from longrun.models import Message, RunSpec
from longrun.models.canonical import canonical_json
from longrun.store import Store
from tests.test_store_chain import history  # noqa: F401  (the fixture)


def test_a_family_with_every_table_exports_and_verifies(history: Store, tmp_path: Path) -> None:  # noqa: F811
    store = history
    store.create_run("r-child", RunSpec(objective="a subagent", workspace="/tmp/ws"), parent_run_id="r")
    store.append_transcript("r-child", Message.user_text("child says"), token_estimate=2, turn=1)
    out = tmp_path / "family.zip"
    done = export_run(store, "r", out, with_artifacts=True, with_family=True)
    assert done.runs == ["r", "r-child"] and done.artifacts == 1
    report = verify_bundle(str(out))
    assert report.ok, [str(p) for p in report.problems]
    assert report.runs == ["r", "r-child"]
    c = report.checked
    assert c["closed_items rows (hash-chained)"] == 1
    assert c["task_state_versions rows (hash-chained)"] == 4 + 1
    assert c["transcript_entries rows (hash-chained)"] == 4 + 1
    assert (c["projections rows (manifest only)"], c["facts rows (manifest only)"], c["instructions rows (manifest only)"],
            c["run_tools rows (manifest only)"], c["run_artifacts rows (manifest only)"]) == (1, 1, 1, 1, 1)
    assert c["artifacts (bytes against their sha256)"] == 1
    assert c["signed decisions"] == 0 and report.signed_by is None

    alone = export_run(store, "r", tmp_path / "alone.zip")
    assert alone.runs == ["r"] and alone.artifacts == 0
    assert verify_bundle(str(tmp_path / "alone.zip")).ok

    with pytest.raises(StoreError, match="never overwritten"):
        export_run(store, "r", out)
    with pytest.raises(RunNotFoundError):
        export_run(store, "nope", tmp_path / "nope.zip")
    assert not (tmp_path / "nope.zip").exists() and [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_cut_tail_is_named_even_with_the_manifest_fixed(history: Store, tmp_path: Path) -> None:  # noqa: F811
    out = tmp_path / "r.zip"
    export_run(history, "r", out)
    with zipfile.ZipFile(out) as z:
        files = {i.filename: z.read(i) for i in z.infolist()}
    member = "runs/r/closed_items.jsonl"
    files[member] = b"".join(files[member].splitlines(keepends=True)[:-1])
    manifest = json.loads(files["manifest.json"])
    for m in manifest["members"]:
        if m["name"] == member:
            m["sha256"], m["size"] = hashlib.sha256(files[member]).hexdigest(), len(files[member])
    files["manifest.json"] = canonical_json(manifest).encode()
    forged = tmp_path / "forged.zip"
    with zipfile.ZipFile(forged, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    problems = [str(p) for p in verify_bundle(str(forged)).problems]
    assert any(p.startswith(f"{member} row 1: the chain ends after row 0 but 1 rows were written") for p in problems), problems


def test_bytes_flipped_inside_the_zip_are_a_named_finding_not_a_crash(history: Store, tmp_path: Path) -> None:  # noqa: F811
    out = tmp_path / "r.zip"
    export_run(history, "r", out)
    member = "runs/r/audit_events.jsonl"
    with zipfile.ZipFile(out) as z:
        info = z.getinfo(member)
    raw = bytearray(out.read_bytes())
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)  # the local header's size
    raw[start + info.compress_size // 2] ^= 0xFF
    out.write_bytes(bytes(raw))
    problems = [str(p) for p in verify_bundle(str(out)).problems]
    assert any(p.startswith(f"{member}: cannot be read from the zip") for p in problems), problems
