"""`longrun verify-bundle`: an evidence bundle re-checked from the file alone.

No database, no Temporal, no network: this module imports none of their clients
(`tests/test_evidence_bundle.py` holds it to that), so it runs on an auditor's laptop with only
the longrun package. It checks, and counts:

- the manifest: every member's sha256 and size; no member missing, none added, none twice;
- the bundle's signature, when there is one: Ed25519 over `SIGNING_PREFIX + manifest.json` by
  a key in the bundle that was an active operator key at export time (and, with `expect_signer`,
  the key you were told to expect: a bundle rewritten whole can be re-signed, by another key);
- every key: its public key hashes to its id;
- every hash chain of every run (state versions, transcript, audit, closed items) against the
  heads the database held at export, and the closed items' head against the last state;
- every signed decision and scope, with `audit --verify`'s own checks, against the keys in the
  bundle as registered, expired and revoked at the moment the decision was recorded; and that
  every approval and scope any state version held was such a verified decision;
- the artifacts' bytes against their names.

What it cannot know from the file alone: that the exporter's database was honest (a database
superuser can recompute hash chains, though not signatures), and, for an unsigned bundle, that
nobody rewrote the file whole. docs/EVIDENCE.md says what each check proves.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import sys
from typing import Any

from longrun.auth.check import Credential
from longrun.auth.keys import load_public_pem, verify_signature
from longrun.errors import ConfigError
from longrun.evidence import bundle as fmt
from longrun.evidence.arguments import add_arguments
from longrun.evidence.bundle import BundleError, BundleReader
from longrun.evidence.lineage import cross_check
from longrun.evidence.report import BundleReport
from longrun.evidence.runs import check_run, read_rows
from longrun.evidence.source import BundleSource, credential_of, when

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def _manifest(reader: BundleReader, report: BundleReport) -> tuple[dict[str, Any], bytes, dict[str, str]]:
    """The manifest, its bytes, and each listed member's sha256 as read; findings for every member
    that is missing, unlisted, doubled or changed."""
    if not reader.has(fmt.MANIFEST):
        raise BundleError(f"{reader.zip.filename} has no {fmt.MANIFEST}: it is not a longrun evidence bundle")
    for name in reader.duplicates:
        report.bad(name, None, "appears more than once in the zip: a reader could be shown either copy")
    body = reader.read(fmt.MANIFEST)
    try:
        manifest = json.loads(body)
        members = manifest["members"]
        assert isinstance(members, list)
    except (ValueError, KeyError, TypeError, AssertionError) as exc:
        raise BundleError(f"{fmt.MANIFEST} is not a manifest ({exc})") from exc
    if manifest.get("format") != fmt.FORMAT or manifest.get("format_version") not in fmt.READABLE_VERSIONS:
        report.bad(fmt.MANIFEST, None, f"format {manifest.get('format')!r} version {manifest.get('format_version')!r} "
                   f"is not {fmt.FORMAT} {' or '.join(map(str, fmt.READABLE_VERSIONS))}: use the longrun version that "
                   "wrote it "
                   f"({manifest.get('longrun_version')!r})")
    report.exported_at = str(manifest.get("exported_at"))
    listed: dict[str, dict[str, Any]] = {}
    for i, m in enumerate(members, start=1):
        if not isinstance(m, dict) or not isinstance(m.get("name"), str) or m["name"] in listed \
                or m["name"] in (fmt.MANIFEST, fmt.SIGNATURE):
            report.bad(fmt.MANIFEST, None, f"member entry {i} is malformed or names a member twice")
            continue
        listed[m["name"]] = m
    digests: dict[str, str] = {}
    for name, m in listed.items():
        if not reader.has(name):
            report.bad(name, None, "is listed in the manifest but missing from the bundle: it was removed")
            continue
        try:
            got = reader.digest(name)
        except BundleError as exc:
            report.bad(name, None, str(exc))
            continue
        digests[name] = got.sha256
        report.checked["members (sha256 and size)"] += 1
        if (got.sha256, got.size) != (m.get("sha256"), m.get("size")):
            report.bad(name, None, f"sha256 {got.sha256[:16]}... ({got.size} bytes) does not match the manifest's "
                       f"{str(m.get('sha256'))[:16]}... ({m.get('size')} bytes): the member was changed after export")
    for name in sorted(set(reader.names) - set(listed) - {fmt.MANIFEST, fmt.SIGNATURE}):
        report.bad(name, None, "is not listed in the manifest: it was added after export")
    return manifest, body, digests


def _keys(reader: BundleReader, report: BundleReport) -> dict[str, Credential]:
    roles: dict[str, tuple[str, ...]] = {}
    for _line, row in read_rows(reader, report, fmt.PRINCIPALS) or []:
        if isinstance(row.get("name"), str) and isinstance(row.get("roles"), list):
            roles[row["name"]] = tuple(str(r) for r in row["roles"])
    keys: dict[str, Credential] = {}
    for line, row in read_rows(reader, report, fmt.CREDENTIALS) or []:
        try:
            cred = credential_of(row, roles)
        except (ValueError, TypeError, KeyError) as exc:
            report.bad(fmt.CREDENTIALS, line, f"key {row.get('key_id')}: {exc}")
            continue
        keys[cred.key_id] = cred
        report.signers[cred.key_id] = cred.principal + (f" (revoked {cred.revoked_at:%Y-%m-%d %H:%M:%S} UTC)"
                                                        if cred.revoked_at else "")
        report.checked["public keys"] += 1
    return keys


def _signature(reader: BundleReader, report: BundleReport, body: bytes, keys: dict[str, Credential],
               expect_signer: str | None) -> None:
    if not reader.has(fmt.SIGNATURE):
        if expect_signer:
            report.bad(fmt.SIGNATURE, None, f"missing: you expected the bundle signed by key {expect_signer}")
        return
    report.checked["bundle signatures"] += 1
    try:
        sig = json.loads(reader.read(fmt.SIGNATURE))
        key_id, signature = str(sig["key_id"]), base64.b64decode(sig["signature"], validate=True)
    except (ValueError, KeyError, TypeError, binascii.Error, BundleError) as exc:
        report.bad(fmt.SIGNATURE, None, f"is not a signature record ({exc})")
        return
    cred = keys.get(key_id)
    if cred is None:
        report.bad(fmt.SIGNATURE, None, f"names key {key_id}, which is not in {fmt.CREDENTIALS}")
        return
    try:
        public = load_public_pem(cred.public_key_pem)
    except ConfigError as exc:
        report.bad(fmt.SIGNATURE, None, str(exc))
        return
    if not verify_signature(public, fmt.signed_message(body).decode("utf-8"), signature):
        report.bad(fmt.SIGNATURE, None, f"does not verify against key {key_id} of {cred.principal}: the manifest was "
                   "changed after it was signed, or the signature is not this key's")
        return
    exported = when(report.exported_at)
    if exported is None or cred.status_at(exported) != "active" or "operator" not in cred.roles:
        report.bad(fmt.SIGNATURE, None, f"key {key_id} of {cred.principal} was not an active operator key at export "
                   f"time ({cred.status_at(exported) if exported else 'no export time'}; roles "
                   f"{', '.join(cred.roles)})")
        return
    if expect_signer and expect_signer != key_id:
        report.bad(fmt.SIGNATURE, None, f"is by key {key_id} of {cred.principal}, not the key {expect_signer} you "
                   "expected: someone may have rewritten the bundle and signed it again")
        return
    report.signed_by = f"{cred.principal} (key {key_id})"


def _artifacts(reader: BundleReader, report: BundleReport, digests: dict[str, str]) -> None:
    for line, row in read_rows(reader, report, fmt.ARTIFACT_INDEX) or []:
        name = fmt.ARTIFACTS_DIR + str(row.get("sha256"))
        if name in digests:
            report.checked["artifacts (bytes against their sha256)"] += 1
            if digests[name] != row.get("sha256"):
                report.bad(name, None, f"its bytes hash to {digests[name][:16]}..., not to its name: they were changed")
        elif reader.has(name):
            report.bad(fmt.ARTIFACT_INDEX, line, f"artifact {name} is in the zip but not in the manifest")


def verify_bundle(path: str, *, expect_signer: str | None = None) -> BundleReport:
    """Check the bundle at `path` (see the module docstring); the report names every failure.

    Raises:
        BundleError: the file is not a zip, or has no readable manifest (nothing else can be checked)."""
    report = BundleReport(path)
    reader = BundleReader(path)
    try:
        manifest, body, digests = _manifest(reader, report)
        keys = _keys(reader, report)
        _signature(reader, report, body, keys, expect_signer)
        heads: dict[str, Any] = {}
        if reader.has(fmt.HEADS):
            try:
                heads = json.loads(reader.read(fmt.HEADS))
                assert isinstance(heads, dict), "not an object"
            except (ValueError, BundleError, AssertionError) as exc:
                report.bad(fmt.HEADS, None, f"is not a JSON object of heads ({exc})")
                heads = {}
        else:
            report.bad(fmt.HEADS, None, "missing from the bundle")
        source = BundleSource(keys=keys)
        for run in manifest.get("runs") or []:
            if not isinstance(run, dict):
                report.bad(fmt.MANIFEST, None, f"a run entry is not an object: {run!r}")
                continue
            run_id, folder = str(run.get("run_id")), str(run.get("dir"))
            report.runs.append(run_id)
            if folder != fmt.run_dir(run_id):
                report.bad(fmt.MANIFEST, None, f"run {run_id} is kept in {folder}, not {fmt.run_dir(run_id)}")
                continue
            check_run(reader, report, run_id, folder, heads, source, manifest.get("format_version"))
        if not report.runs:
            report.bad(fmt.MANIFEST, None, "lists no runs")
        cross_check(report, source.inherited, source.entries)
        _artifacts(reader, report, digests)
    finally:
        reader.close()
    return report


def main(argv: list[str] | None = None) -> int:
    """`python -m longrun.evidence.verify FILE`: the same as `longrun verify-bundle FILE`."""
    parser = argparse.ArgumentParser(prog="longrun verify-bundle", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


def run(args: argparse.Namespace) -> int:
    try:
        report = verify_bundle(args.file, expect_signer=args.expect_signer)
    except BundleError as exc:
        print(f"longrun verify-bundle: {exc}", file=sys.stderr)
        return EXIT_FAIL
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False))
    else:
        print("\n".join(report.lines()), flush=True)
    if not report.ok:
        print(f"longrun verify-bundle: {len(report.problems)} problem(s); first: {report.problems[0]}", file=sys.stderr)
        return EXIT_FAIL
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["BundleError", "add_arguments", "main", "run", "verify_bundle"]
