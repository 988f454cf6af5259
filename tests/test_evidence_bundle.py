"""Evidence bundles on the real stack (issue 29): a finished run with a signed approval is
exported with the installed `longrun` script, and `longrun verify-bundle` checks it in a
subprocess with no network at all (bubblewrap's empty network namespace) and the database and
Temporal addresses pointing nowhere. Then each kind of tampering a holder of the file could try
is tried, and each is caught with the member (and row) named."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import warnings
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import load_pem_public_key

from longrun.auth.keys import public_pem
from longrun.evidence.verify import verify_bundle
from longrun.models.canonical import canonical_json, chain_hash
from tests.support.cli_stack import LONGRUN, Cli
from tests.support.evidence_docs import check_by_the_docs

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

NOWHERE = {"LONGRUN_DATABASE_URL": "postgresql+psycopg://nobody:x@127.0.0.1:9/nowhere",
           "TEMPORAL_ADDRESS": "127.0.0.1:9", "LONGRUN_OWNER_DATABASE_URL": ""}


@pytest.fixture(scope="module")
def exported(cli: Cli, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One finished run with an approval signed by alice, exported signed by the operator olga."""
    workspace = tmp_path_factory.mktemp("ws") / "tiny"
    shutil.copytree(Path(__file__).resolve().parents[1] / "samples" / "tiny", workspace)
    run_id, _status = cli.start_and_wait(workspace)
    approved = cli("approve", run_id, "--as", "alice")
    assert approved.returncode == 0, approved.stderr
    assert cli("watch", run_id, "--interval", "0.2").returncode == 0
    assert cli("audit", run_id, "--verify").returncode == 0
    olga = cli.json("approvers", "add", "olga", "--role", "operator")
    out = tmp_path_factory.mktemp("bundle") / "run.zip"
    done = cli("export", run_id, "-o", str(out), "--with-artifacts", "--sign-as", "olga", "--json")
    assert done.returncode == 0, done.stderr
    again = cli("export", run_id, "-o", str(out))
    assert again.returncode == 1 and "never overwritten" in again.stderr
    return {"run_id": run_id, "path": out, "olga": olga["key_id"], "export": json.loads(done.stdout)}


def offline(*args: str) -> subprocess.CompletedProcess[str]:
    """`longrun verify-bundle` with no network namespace and nothing configured to reach."""
    env = {**os.environ, **NOWHERE}
    cmd = [LONGRUN, "verify-bundle", *args]
    if shutil.which("bwrap"):
        cmd = ["bwrap", "--dev-bind", "/", "/", "--unshare-net", "--", *cmd]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)


def test_a_signed_export_verifies_offline_and_says_what_it_checked(exported: dict[str, Any]) -> None:
    done = offline(str(exported["path"]), "--expect-signer", exported["olga"], "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] and report["runs"] == [exported["run_id"]]
    assert report["signed_by"] == f"olga (key {exported['olga']})"
    checked = report["checked"]
    assert checked["signed decisions"] == 1
    assert checked["audit_events rows (hash-chained)"] == exported["export"]["heads"][exported["run_id"]][
        "audit_events"]["count"] > 0
    assert checked["task_state_versions rows (hash-chained)"] > 1
    assert checked["transcript_entries rows (hash-chained)"] > 1
    assert checked["bundle signatures"] == 1 and checked["public keys"] >= 2
    assert checked["members (sha256 and size)"] == exported["export"]["members"] - 1
    text = offline(str(exported["path"]))
    assert text.returncode == 0 and "OK: every member, hash chain and signature verifies" in text.stdout


def test_the_verifier_imports_no_database_temporal_or_network_client() -> None:
    probe = ("import sys, longrun.evidence.verify; "
             "print(sorted(m for m in ('sqlalchemy', 'psycopg', 'temporalio', 'httpx', 'urllib3', 'anthropic') "
             "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"


# ------------------------------------------------------------------------------------ tampering


def members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as z:
        return {i.filename: z.read(i) for i in z.infolist()}


def write(path: Path, files: dict[str, bytes], extra: Sequence[tuple[str, bytes]] = ()) -> Path:
    with zipfile.ZipFile(path, "w") as z, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # zipfile warns of a name written twice: that is the point
        for name, data in [*files.items(), *extra]:
            z.writestr(name, data)
    return path


def fix_manifest(files: dict[str, bytes], *names: str) -> None:
    """What someone editing the bundle does next: recompute the listed hashes and sizes."""
    manifest = json.loads(files["manifest.json"])
    for m in manifest["members"]:
        if m["name"] in names:
            m["sha256"], m["size"] = hashlib.sha256(files[m["name"]]).hexdigest(), len(files[m["name"]])
    files["manifest.json"] = canonical_json(manifest).encode()


def rows(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.decode().splitlines()]


def lines(items: list[dict[str, Any]]) -> bytes:
    return b"".join(canonical_json(r).encode() + b"\n" for r in items)


def rechain(items: list[dict[str, Any]]) -> str:
    """Recompute every hash of a chain from its rows (what a forger with the file can do)."""
    prev = "0" * 64
    for r in items:
        r["prev_hash"] = prev
        r["hash"] = prev = chain_hash(prev, {k: v for k, v in r.items() if k not in ("prev_hash", "hash")})
    return prev


def problems(path: Path, **kw: Any) -> list[str]:
    report = verify_bundle(str(path), **kw)
    assert not report.ok
    return [str(p) for p in report.problems]


@pytest.fixture
def forge(exported: dict[str, Any], tmp_path: Path) -> Callable[..., tuple[list[str], str]]:
    def go(change: Callable[[dict[str, bytes], str], None], *fixed: str, **kw: Any) -> tuple[list[str], str]:
        files = members(exported["path"])
        folder = f"runs/{exported['run_id']}"
        change(files, folder)
        fix_manifest(files, *[f.replace("RUN", folder) for f in fixed])
        return problems(write(tmp_path / "forged.zip", files), **kw), folder

    return go


def test_edited_member_bytes_are_caught_by_the_manifest(forge: Callable[..., tuple[list[str], str]]) -> None:
    def change(files: dict[str, bytes], folder: str) -> None:
        files[f"{folder}/transcript_entries.jsonl"] = files[f"{folder}/transcript_entries.jsonl"].replace(b"e", b"E", 1)

    found, folder = forge(change)
    assert any(p.startswith(f"{folder}/transcript_entries.jsonl: sha256") and "changed after export" in p for p in found)


def test_an_edited_row_with_the_manifest_fixed_is_named_by_its_chain(forge: Callable[..., tuple[list[str], str]]) -> None:
    def change(files: dict[str, bytes], folder: str) -> None:
        items = rows(files[f"{folder}/audit_events.jsonl"])
        items[2]["actor"] = "human:mallory"
        files[f"{folder}/audit_events.jsonl"] = lines(items)

    found, folder = forge(change, "RUN/audit_events.jsonl")
    assert any(p.startswith(f"{folder}/audit_events.jsonl row 3: content does not match its stored hash") for p in found)
    assert any(p.startswith("manifest.sig: does not verify") for p in found), "the signed manifest was changed"


def test_a_dropped_row_is_caught(forge: Callable[..., tuple[list[str], str]]) -> None:
    def change(files: dict[str, bytes], folder: str) -> None:
        items = rows(files[f"{folder}/task_state_versions.jsonl"])
        del items[1]
        files[f"{folder}/task_state_versions.jsonl"] = lines(items)

    found, folder = forge(change, "RUN/task_state_versions.jsonl")
    assert any(p.startswith(f"{folder}/task_state_versions.jsonl row 2: row 2 is missing") for p in found)


def test_reordered_rows_are_caught(forge: Callable[..., tuple[list[str], str]]) -> None:
    def change(files: dict[str, bytes], folder: str) -> None:
        items = rows(files[f"{folder}/transcript_entries.jsonl"])
        items[0], items[1] = items[1], items[0]
        files[f"{folder}/transcript_entries.jsonl"] = lines(items)

    found, folder = forge(change, "RUN/transcript_entries.jsonl")
    assert any(p.startswith(f"{folder}/transcript_entries.jsonl row 1: row 1 is missing") for p in found)


def _granted(items: list[dict[str, Any]]) -> dict[str, Any]:
    return next(r for r in items if r["kind"] == "approval_granted")


def test_a_swapped_signature_is_caught_even_with_the_chain_and_heads_recomputed(
        forge: Callable[..., tuple[list[str], str]], exported: dict[str, Any]) -> None:
    seq = 0

    def change(files: dict[str, bytes], folder: str) -> None:
        nonlocal seq
        items = rows(files[f"{folder}/audit_events.jsonl"])
        row = _granted(items)
        seq = row["seq"]
        other = Ed25519PrivateKey.generate().sign(row["event"]["proof"]["payload"].encode())
        row["event"]["proof"]["signature"] = base64.b64encode(other).decode()
        heads = json.loads(files["heads.json"])
        heads[exported["run_id"]]["audit_events"]["head"] = rechain(items)
        files[f"{folder}/audit_events.jsonl"] = lines(items)
        files["heads.json"] = canonical_json(heads).encode()

    found, folder = forge(change, "RUN/audit_events.jsonl", "heads.json")
    assert not any("audit_events.jsonl" in p and "stored hash" in p for p in found), "the forger fixed the chain"
    assert any(p.startswith(f"{folder}/audit_events.jsonl row {seq}: audit row {seq} (approval_granted): the "
                            "signature does not verify against key") for p in found), found
    assert any(p.startswith(f"{folder}/task_state_versions.jsonl") and "is not a verified signed decision" in p
               for p in found)


def test_a_replaced_public_key_is_caught(forge: Callable[..., tuple[list[str], str]]) -> None:
    def change(files: dict[str, bytes], folder: str) -> None:
        keys = rows(files["keys/credentials.jsonl"])
        alice = next(k for k in keys if k["principal"] == "alice")
        alice["public_key"] = public_pem(Ed25519PrivateKey.generate().public_key())
        files["keys/credentials.jsonl"] = lines(keys)

    found, _folder = forge(change, "keys/credentials.jsonl")
    assert any(p.startswith("keys/credentials.jsonl row") and "the key was replaced after export" in p for p in found)
    assert any("approval_granted" in p and "is not registered" in p for p in found)


@pytest.mark.parametrize("forged", ["registered_later", "revoked_earlier"])
def test_a_forged_key_registration_or_revocation_time_is_caught(
        forge: Callable[..., tuple[list[str], str]], forged: str) -> None:
    def change(files: dict[str, bytes], folder: str) -> None:
        granted = _granted(rows(files[f"{folder}/audit_events.jsonl"]))
        keys = rows(files["keys/credentials.jsonl"])
        alice = next(k for k in keys if k["key_id"] == granted["event"]["proof"]["key_id"])
        if forged == "registered_later":
            alice["created_at"] = "2999-01-01T00:00:00+00:00"
        else:
            alice["revoked_at"] = alice["created_at"]
        files["keys/credentials.jsonl"] = lines(keys)

    found, folder = forge(change, "keys/credentials.jsonl")
    why = "was registered only after this decision" if forged == "registered_later" else "was revoked at"
    assert any(p.startswith(f"{folder}/audit_events.jsonl row") and why in p for p in found), found
    assert any(p.startswith("manifest.sig: does not verify") for p in found)


def test_a_removed_member_is_caught(forge: Callable[..., tuple[list[str], str]]) -> None:
    found, folder = forge(lambda files, folder: files.pop(f"{folder}/run_tools.jsonl"))
    assert f"{folder}/run_tools.jsonl: is listed in the manifest but missing from the bundle: it was removed" in found


def test_an_added_or_doubled_member_is_caught(exported: dict[str, Any], tmp_path: Path) -> None:
    files = members(exported["path"])
    path = write(tmp_path / "added.zip", files, [("runs/notes.txt", b"trust me"),
                                                 ("heads.json", files["heads.json"])])
    found = problems(path)
    assert "runs/notes.txt: is not listed in the manifest: it was added after export" in found
    assert any(p.startswith("heads.json: appears more than once") for p in found)


def test_a_corrupt_bundle_signature_or_another_signer_is_caught(exported: dict[str, Any], tmp_path: Path) -> None:
    files = members(exported["path"])
    sig = json.loads(files["manifest.sig"])
    raw = bytearray(base64.b64decode(sig["signature"]))
    raw[0] ^= 1
    sig["signature"] = base64.b64encode(bytes(raw)).decode()
    files["manifest.sig"] = canonical_json(sig).encode()
    found = problems(write(tmp_path / "badsig.zip", files))
    assert any(p.startswith("manifest.sig: does not verify against key") for p in found)
    other = problems(exported["path"], expect_signer="0" * 32)
    assert any("not the key 00000000000000000000000000000000 you expected" in p for p in other)
    unsigned = dict(members(exported["path"]))
    unsigned.pop("manifest.sig")
    done = offline(str(write(tmp_path / "unsigned.zip", unsigned)), "--expect-signer", exported["olga"])
    assert done.returncode == 1 and "manifest.sig: missing" in done.stdout and "What to do:" in done.stdout


# --------------------------------------------------------------- verifying without longrun at all


def test_docs_evidence_md_is_enough_to_verify_without_longrun(exported: dict[str, Any]) -> None:
    """Only hashlib, json and `cryptography`, following docs/EVIDENCE.md: every chain re-derived to
    the head in heads.json, the manifest's hashes, its signature, and the approval's signature."""
    files = members(exported["path"])
    assert check_by_the_docs(files) > 0
    manifest = json.loads(files["manifest.json"])
    keys = {k["key_id"]: k for k in map(json.loads, files["keys/credentials.jsonl"].decode().splitlines())}

    def public(key_id: str) -> Ed25519PublicKey:
        key = load_pem_public_key(keys[key_id]["public_key"].encode())
        assert isinstance(key, Ed25519PublicKey)
        return key

    sig = json.loads(files["manifest.sig"])
    public(sig["key_id"]).verify(base64.b64decode(sig["signature"]),
                                 b"longrun-evidence-manifest-v1\n" + files["manifest.json"])
    run_dir = manifest["runs"][0]["dir"]
    granted = _granted(rows(files[f"{run_dir}/audit_events.jsonl"]))
    proof = granted["event"]["proof"]
    public(proof["key_id"]).verify(base64.b64decode(proof["signature"]), proof["payload"].encode())
    assert json.loads(proof["payload"])["action_hash"] == granted["event"]["action_hash"]


def test_a_body_removed_outside_prune_is_named(forge: Callable[..., tuple[list[str], str]]) -> None:
    # a tombstone links into the chain (its hash kept), but no audited prune removed that body
    def change(files: dict[str, bytes], folder: str) -> None:
        items = rows(files[f"{folder}/transcript_entries.jsonl"])
        items[1]["content"] = {"pruned": {"sha256": "0" * 64, "bytes": 10, "at": "2026-12-02T00:00:00+00:00"}}
        files[f"{folder}/transcript_entries.jsonl"] = lines(items)

    found, folder = forge(change, "RUN/transcript_entries.jsonl")
    assert any(p.startswith(f"{folder}/transcript_entries.jsonl row 2: 1 entries are tombstones") and
               "the audit records 0 pruned" in p for p in found), found
