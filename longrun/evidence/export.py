"""`longrun export`: one run's whole record (and its family's) written to an evidence bundle.

Everything is read in one REPEATABLE READ snapshot, so the chain heads in the bundle are the
heads of exactly the rows in it, even while the run (or another) keeps writing. Chained rows are
written as their hashed payload (the very function the store hashed them with,
`longrun.models.chain`) plus `prev_hash` and `hash`, so a verifier recomputes each hash from the
row as it reads it. The file appears whole or not at all: it is written under a temporary name
beside the target and renamed.

Which runs a bundle holds is decided in one place, `family`: the run, and with `--family` its
subagents and forks (and theirs). A fork's transcript is its ancestors' entries through each fork
point, by reference (`longrun.store.lineage`), so its folder also holds its lineage rows and those
entries (`inherited_entries.jsonl`), read with the store's own `VISIBLE_ENTRIES`: the bundle
carries everything the fork's transcript chain needs, whether or not its ancestors are in it.
"""

from __future__ import annotations

import base64
import os
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from sqlalchemy import Table, or_, select
from sqlalchemy.orm import Session

import longrun
from longrun.auth.keys import Signer
from longrun.errors import RunNotFoundError, StoreError
from longrun.evidence import bundle as fmt
from longrun.models import utcnow
from longrun.models.canonical import GENESIS_HASH, canonical_json, sha256_hex
from longrun.models.chain import (
    audit_payload,
    closed_item_payload,
    state_version_payload,
    timestamp,
    transcript_payload,
)
from longrun.store import Store
from longrun.store.tables import (
    ArtifactRow,
    AuditEventRow,
    CallEditRow,
    CredentialRow,
    FactStoreRow,
    InstructionRow,
    PrincipalRow,
    ProjectionRow,
    RunArtifactRow,
    RunRow,
    RunToolRow,
    TaskStateRow,
    TaskStateVersionRow,
    TranscriptEntryRow,
    core_table,
)
from longrun.store.tables_closed import ClosedItemRow
from longrun.store.tables_lineage import RunLineageRow
from longrun.store.tables_requests import RunRequestRow
from longrun.store.tables_spend import BudgetRaiseRow, ModelRequestRow
from longrun.store.transcript import VISIBLE_ENTRIES

_INHERITED_SQL = VISIBLE_ENTRIES + """
SELECT run_id, seq, role, content, token_estimate, usage, turn, created_at, prev_hash, hash FROM te
WHERE run_id <> %(run_id)s ORDER BY seq
"""
"""The entries a fork reads from its ancestors, as `Store.verify_chain` reads them."""

EXPORT_ACTOR_ROLE = "operator"
"""The role a key must have to sign a bundle (`--sign-as`)."""


@dataclass
class ExportResult:
    path: Path
    runs: list[str]
    members: int
    artifacts: int
    signed_by: str | None
    heads: dict[str, Any] = field(default_factory=dict)


def family(s: Session, run_id: str, *, with_family: bool) -> list[str]:
    """The runs a bundle holds: the run, and with `with_family` its subagents and its forks (and
    theirs, forks of forks included), level by level, each level oldest first.

    The one place that says what a run's family is. A fork's ancestors are not added: its bundle
    folder carries the entries it reads from them (`inherited_entries.jsonl`)."""
    out = [run_id]
    if not with_family:
        return out
    i = 0
    while i < len(out):
        forks = select(RunLineageRow.run_id).where(RunLineageRow.parent_run_id == out[i])
        children = s.scalars(select(RunRow.run_id).where(or_(RunRow.parent_run_id == out[i], RunRow.run_id.in_(forks)))
                             .order_by(RunRow.created_at, RunRow.run_id))
        out.extend(c for c in children if c not in out)
        i += 1
    return out


def _plain(table: Table, row: Any) -> dict[str, Any]:
    """Every column of a row as JSON: timestamps as the chains write them, bytes as base64."""
    out: dict[str, Any] = {}
    for col in table.columns:
        value = getattr(row, col.key)
        if isinstance(value, datetime):
            value = timestamp(value)
        elif isinstance(value, (bytes, memoryview)):
            value = base64.b64encode(bytes(value)).decode()
        elif isinstance(value, Decimal):
            value = str(value)  # dollars exactly as stored, never a float
        out[col.key] = value
    return out


def _rows(s: Session, row_type: Any, run_id: str, order: Sequence[Any]) -> list[dict[str, Any]]:
    table = core_table(row_type)
    return [_plain(table, r) for r in s.execute(select(table).where(table.c.run_id == run_id).order_by(*order))]


class _Writer:
    """Members into the zip, each one's sha256 and size remembered for the manifest."""

    def __init__(self, zf: zipfile.ZipFile, when: datetime) -> None:
        self.zf = zf
        self.members: list[dict[str, Any]] = []
        self.date_time = when.timetuple()[:6]

    def put(self, name: str, data: bytes) -> None:
        info = zipfile.ZipInfo(name, date_time=self.date_time)
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zf.writestr(info, data)
        self.members.append({"name": name, "sha256": sha256_hex(data), "size": len(data)})


def _run_members(s: Session, w: _Writer, run: RunRow) -> dict[str, Any]:
    """Write one run's members; its chain heads."""
    rid, d = run.run_id, fmt.run_dir(run.run_id)
    w.put(f"{d}/run.json", canonical_json(_plain(core_table(RunRow), run)).encode())
    versions = list(s.scalars(select(TaskStateVersionRow).where(TaskStateVersionRow.run_id == rid)
                              .order_by(TaskStateVersionRow.version)))
    w.put(f"{d}/task_state_versions.jsonl", fmt.jsonl(
        {**state_version_payload(rid, r.version, r.state, r.actor, r.reason, r.created_at),
         "prev_hash": r.prev_hash, "hash": r.hash} for r in versions))
    w.put(f"{d}/transcript_entries.jsonl", fmt.jsonl(
        {**transcript_payload(rid, r.seq, r.role, r.content, r.token_estimate, r.usage, r.turn, r.created_at),
         "prev_hash": r.prev_hash, "hash": r.hash}
        for r in s.scalars(select(TranscriptEntryRow).where(TranscriptEntryRow.run_id == rid)
                           .order_by(TranscriptEntryRow.seq))))
    _lineage_members(s, w, rid, d)
    w.put(f"{d}/audit_events.jsonl", fmt.jsonl(
        {**audit_payload(rid, r.seq, r.kind, r.event, r.actor, r.created_at), "prev_hash": r.prev_hash, "hash": r.hash}
        for r in s.scalars(select(AuditEventRow).where(AuditEventRow.run_id == rid).order_by(AuditEventRow.seq))))
    w.put(f"{d}/closed_items.jsonl", fmt.jsonl(
        {**closed_item_payload(rid, r.seq, r.kind, r.item_id, r.action_hash, r.call_ref, r.item, r.state_version,
                               r.created_at), "prev_hash": r.prev_hash, "hash": r.hash}
        for r in s.scalars(select(ClosedItemRow).where(ClosedItemRow.run_id == rid).order_by(ClosedItemRow.seq))))
    for name, row_type, order in (
        ("projections", ProjectionRow, [ProjectionRow.version]),
        ("facts", FactStoreRow, [FactStoreRow.seq]),
        ("run_tools", RunToolRow, [RunToolRow.position]),
        ("run_artifacts", RunArtifactRow, [RunArtifactRow.created_at, RunArtifactRow.sha256]),
        ("instructions", InstructionRow, [InstructionRow.instruction_id]),
        ("call_edits", CallEditRow, [CallEditRow.edit_id]),
        ("run_requests", RunRequestRow, [RunRequestRow.created_at, RunRequestRow.id]),
        ("model_requests", ModelRequestRow, [ModelRequestRow.turn, ModelRequestRow.overflow_retry,
                                             ModelRequestRow.attempt]),
        ("budget_raises", BudgetRaiseRow, [BudgetRaiseRow.created_at, BudgetRaiseRow.request_id]),
    ):
        w.put(f"{d}/{name}.jsonl", fmt.jsonl(_rows(s, row_type, rid, order)))
    head = s.get(TaskStateRow, rid)
    closed = (head.state.get("closed") or {}) if head is not None else {}
    return {
        "task_state_versions": {"count": run.state_count, "head": run.state_head},
        "transcript_entries": {"count": run.transcript_count, "head": run.transcript_head},
        "audit_events": {"count": run.audit_count, "head": run.audit_head},
        "closed_items": {"count": int(closed.get("count", 0)), "head": closed.get("head") or GENESIS_HASH},
    }


def _lineage_rows(s: Session, run_id: str) -> list[RunLineageRow]:
    """The run's `run_lineage` row, its parent's, and so on up to a run that is no fork."""
    out: list[RunLineageRow] = []
    row = s.get(RunLineageRow, run_id)
    while row is not None and all(r.run_id != row.run_id for r in out):
        out.append(row)
        row = s.get(RunLineageRow, row.parent_run_id)
    return out


def _lineage_members(s: Session, w: _Writer, rid: str, d: str) -> None:
    """A fork's lineage rows and the ancestors' entries its transcript reads (both empty for a run
    that is no fork), so its transcript chain verifies from its own folder alone."""
    table = core_table(RunLineageRow)
    w.put(f"{d}/{fmt.LINEAGE}.jsonl", fmt.jsonl(_plain(table, r) for r in _lineage_rows(s, rid)))
    w.put(f"{d}/{fmt.INHERITED}.jsonl", fmt.jsonl(
        {**transcript_payload(r.run_id, r.seq, r.role, r.content, r.token_estimate, r.usage, r.turn, r.created_at),
         "prev_hash": r.prev_hash, "hash": r.hash}
        for r in s.connection().exec_driver_sql(_INHERITED_SQL, {"run_id": rid})))


def _signing_credential(s: Session, signer: Signer) -> None:
    """Refuse to sign with a key the database would not vouch for now."""
    row = s.get(CredentialRow, signer.key_id)
    who = s.get(PrincipalRow, signer.principal)
    if row is None or row.principal != signer.principal or who is None:
        raise StoreError(f"key {signer.key_id} is not registered for {signer.principal}: register it with "
                         f"`longrun approvers add {signer.principal} --role operator`, or sign with your registered key")
    now = utcnow()
    if row.revoked_at is not None or (row.expires_at is not None and row.expires_at <= now):
        raise StoreError(f"key {signer.key_id} of {signer.principal} is revoked or expired: a bundle signed with it "
                         f"would not verify; get a new key (`longrun approvers add {signer.principal} --new-key`)")
    if EXPORT_ACTOR_ROLE not in who.roles:
        raise StoreError(f"{signer.principal} has roles {', '.join(who.roles)}, not {EXPORT_ACTOR_ROLE}: only an "
                         f"operator signs bundles (`longrun approvers add {signer.principal} --role operator`)")


def _key_ids(s: Session, runs: list[str]) -> set[str]:
    ids: set[str] = set()
    for event in s.scalars(select(AuditEventRow.event).where(AuditEventRow.run_id.in_(runs))):
        proof = event.get("proof") if isinstance(event, dict) else None
        if isinstance(proof, dict) and isinstance(proof.get("key_id"), str):
            ids.add(proof["key_id"])
    return ids


def _keys(s: Session, w: _Writer, key_ids: set[str]) -> None:
    """The signers and every key they ever had (registration, expiry, revocation as of now)."""
    principals = sorted(set(s.scalars(select(CredentialRow.principal).where(CredentialRow.key_id.in_(key_ids)))))
    ptable, ctable = core_table(PrincipalRow), core_table(CredentialRow)
    w.put(fmt.PRINCIPALS, fmt.jsonl(_plain(ptable, r) for r in s.execute(
        select(ptable).where(ptable.c.name.in_(principals)).order_by(ptable.c.name))))
    w.put(fmt.CREDENTIALS, fmt.jsonl(_plain(ctable, r) for r in s.execute(
        select(ctable).where(ctable.c.principal.in_(principals)).order_by(ctable.c.created_at, ctable.c.key_id))))


def _artifacts(s: Session, w: _Writer, runs: list[str], with_bytes: bool) -> int:
    shas = sorted(set(s.scalars(select(RunArtifactRow.sha256).where(RunArtifactRow.run_id.in_(runs)))))
    meta = s.execute(select(ArtifactRow.sha256, ArtifactRow.media_type, ArtifactRow.size, ArtifactRow.created_at)
                     .where(ArtifactRow.sha256.in_(shas)).order_by(ArtifactRow.sha256))
    w.put(fmt.ARTIFACT_INDEX, fmt.jsonl({"sha256": m.sha256, "media_type": m.media_type, "size": m.size,
                                         "created_at": timestamp(m.created_at)} for m in meta))
    if not with_bytes:
        return 0
    for sha in shas:
        data = s.scalar(select(ArtifactRow.data).where(ArtifactRow.sha256 == sha))
        if data is not None:
            w.put(fmt.ARTIFACTS_DIR + sha, bytes(data))
    return len(shas)


def export_run(store: Store, run_id: str, out: Path, *, with_artifacts: bool = False, with_family: bool = False,
               signer: Signer | None = None) -> ExportResult:
    """Write the bundle of `run_id` to `out` (see `longrun.evidence.bundle` for the layout).

    Raises:
        RunNotFoundError: no such run.
        StoreError: `out` exists, or the signer's key is not an active operator key.
    """
    if out.exists():
        raise StoreError(f"{out} exists already: a bundle is never overwritten; choose another -o path")
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".longrun-export-", suffix=".zip", dir=out.parent)
    os.close(fd)
    try:
        with Session(store.engine) as s, zipfile.ZipFile(tmp, "w") as zf:
            s.connection(execution_options={"isolation_level": "REPEATABLE READ"})
            if s.get(RunRow, run_id) is None:
                raise RunNotFoundError(run_id)
            if signer is not None:
                _signing_credential(s, signer)
            now = utcnow()
            w = _Writer(zf, now)
            runs = family(s, run_id, with_family=with_family)
            heads: dict[str, Any] = {}
            listed = []
            for rid in runs:
                run = s.get(RunRow, rid)
                assert run is not None
                heads[rid] = _run_members(s, w, run)
                fork = s.get(RunLineageRow, rid)
                listed.append({"run_id": rid, "dir": fmt.run_dir(rid), "parent_run_id": run.parent_run_id,
                               "forked_from": None if fork is None else {
                                   "run_id": fork.parent_run_id, "version": fork.parent_version,
                                   "through_seq": fork.parent_through_seq},
                               "status": run.status})
            w.put(fmt.HEADS, canonical_json(heads).encode())
            key_ids = _key_ids(s, runs) | ({signer.key_id} if signer else set())
            _keys(s, w, key_ids)
            count = _artifacts(s, w, runs, with_artifacts)
            manifest = {
                "format": fmt.FORMAT, "format_version": fmt.FORMAT_VERSION, "longrun_version": longrun.__version__,
                "exported_at": timestamp(now), "root_run": run_id, "runs": listed,
                "options": {"with_artifacts": with_artifacts, "family": with_family},
                "members": sorted(w.members, key=lambda m: m["name"]),
            }
            body = fmt.manifest_bytes(manifest)
            zf.writestr(zipfile.ZipInfo(fmt.MANIFEST, date_time=w.date_time), body)
            if signer is not None:
                sig = signer.key.sign(fmt.signed_message(body))
                zf.writestr(zipfile.ZipInfo(fmt.SIGNATURE, date_time=w.date_time), canonical_json(
                    {"algorithm": "ed25519", "key_id": signer.key_id, "principal": signer.principal,
                     "signature": base64.b64encode(sig).decode()}).encode())
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return ExportResult(out, runs, len(w.members) + 1, count, signer.principal if signer else None, heads)


__all__ = ["EXPORT_ACTOR_ROLE", "ExportResult", "export_run", "family"]
