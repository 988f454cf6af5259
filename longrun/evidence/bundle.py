"""The evidence bundle's format: member names, the manifest, its signature, and safe reading.

A bundle is one zip file. Zip rather than tar because a zip has a central directory: a verifier
reads one member without scanning the others, every reader on every system opens it, and each
member is compressed on its own. Two things zip allows are refused when reading, because they
could make a verifier and a person see different files: a name twice (Python's `zipfile` would
quietly return the last one), and a name that is not in the manifest.

Layout (docs/EVIDENCE.md has every field):

    manifest.json                 canonical JSON: format, versions, export time, runs, members
    manifest.sig                  optional: an operator's Ed25519 signature over the manifest
    heads.json                    every run's chain heads and counts, as the database held them
    keys/principals.jsonl         the signers: name, roles, who created them, when
    keys/credentials.jsonl        their public keys with registration, expiry and revocation times
    runs/<dir>/<table>.jsonl      one row per line, canonical JSON, oldest first
    runs/<dir>/run.json           the run's row (spec, model, status, parent)
    runs/<dir>/run_lineage.jsonl  a fork's lineage rows, its own first, up to a run that is no fork
    runs/<dir>/inherited_entries.jsonl  the ancestors' transcript entries a fork reads by reference
    artifacts/index.jsonl         every artifact the runs stored: sha256, media type, size
    artifacts/<sha256>            the bytes (only with --with-artifacts)

Pure: no database, no Temporal, no network; `longrun.evidence.verify` reads with this module.
"""

from __future__ import annotations

import hashlib
import json
import re
import zipfile
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from longrun.models.canonical import canonical_json, sha256_hex

FORMAT = "longrun-evidence"
FORMAT_VERSION = 2
"""2: a run's folder holds `run_lineage.jsonl` and `inherited_entries.jsonl` (forks)."""
READABLE_VERSIONS = (1, 2)
"""Versions `verify-bundle` reads; a version 1 bundle has no lineage members (it holds no forks
that verify: their transcript chains start on an entry not in the bundle)."""
MANIFEST = "manifest.json"
SIGNATURE = "manifest.sig"
HEADS = "heads.json"
PRINCIPALS = "keys/principals.jsonl"
CREDENTIALS = "keys/credentials.jsonl"
ARTIFACT_INDEX = "artifacts/index.jsonl"
ARTIFACTS_DIR = "artifacts/"
SIGNING_PREFIX = b"longrun-evidence-manifest-v1\n"
"""What an operator's key signs: this prefix, then the exact bytes of `manifest.json`. The prefix
keeps a manifest signature from ever being read as another longrun signature (a decision)."""

CHAINED = ("task_state_versions", "transcript_entries", "audit_events", "closed_items")
"""The per-run tables whose rows carry `prev_hash` and `hash`."""
UNCHAINED = ("projections", "facts", "run_tools", "run_artifacts", "instructions", "call_edits", "run_requests",
             "model_requests", "budget_raises")
"""The other append-only rows of a run; the manifest (and its signature) vouch for them."""
RUN_TABLES = CHAINED + UNCHAINED
LINEAGE = "run_lineage"
"""A fork's `run_lineage` rows: its own, its parent's, ... (empty for a run that is no fork)."""
INHERITED = "inherited_entries"
"""The transcript entries a fork reads from its ancestors, oldest first, each under the run that
wrote it: with the run's own `transcript_entries` they are one chain (`longrun.evidence.lineage`)."""

MAX_JSON_MEMBER_BYTES = 512 * 1024 * 1024
"""A JSON member larger than this is refused rather than read into memory (a zip bomb)."""
_SAFE_DIR = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def run_dir(run_id: str) -> str:
    """The folder of a run's members: its id when that is a plain file name, else a hash of it."""
    name = run_id if _SAFE_DIR.match(run_id) and run_id not in (".", "..") else "run-" + sha256_hex(run_id)[:24]
    return f"runs/{name}"


def jsonl(rows: Iterable[Any]) -> bytes:
    """Rows as a member: one canonical JSON value per line, each line ending in a newline."""
    return b"".join(canonical_json(r).encode("utf-8") + b"\n" for r in rows)


def manifest_bytes(manifest: dict[str, Any]) -> bytes:
    return canonical_json(manifest).encode("utf-8")


def signed_message(manifest: bytes) -> bytes:
    return SIGNING_PREFIX + manifest


class BundleError(Exception):
    """The file is not a bundle this verifier can read at all (not a zip, no manifest)."""


@dataclass(frozen=True)
class Member:
    name: str
    sha256: str
    size: int


class BundleReader:
    """A bundle opened for reading, with the zip's own oddities turned into findings."""

    def __init__(self, path: str) -> None:
        try:
            self.zip = zipfile.ZipFile(path)
        except (OSError, zipfile.BadZipFile) as exc:
            raise BundleError(f"{path} is not a readable zip file ({exc}): is it the file `longrun export` wrote?") from exc
        infos = self.zip.infolist()
        self.names = [i.filename for i in infos]
        self.duplicates = sorted(n for n, times in Counter(self.names).items() if times > 1)
        self._info = {i.filename: i for i in infos}

    def close(self) -> None:
        self.zip.close()

    def has(self, name: str) -> bool:
        return name in self._info

    def digest(self, name: str) -> Member:
        """The sha256 and size of a member's bytes, read in chunks (artifacts may be large).

        Raises:
            BundleError: the zip's own data for it is damaged (its CRC or compression)."""
        h = hashlib.sha256()
        size = 0
        try:
            with self.zip.open(self._info[name]) as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
                    size += len(chunk)
        except (zipfile.BadZipFile, zlib.error, OSError, EOFError) as exc:
            raise BundleError(f"cannot be read from the zip ({exc}): its bytes were changed in the file") from exc
        return Member(name, h.hexdigest(), size)

    def read(self, name: str) -> bytes:
        """Raises:
        BundleError: too large to be a JSON member, or damaged in the zip."""
        info = self._info[name]
        if info.file_size > MAX_JSON_MEMBER_BYTES:
            raise BundleError(f"{name} says it is {info.file_size:,} bytes, over {MAX_JSON_MEMBER_BYTES:,}")
        try:
            with self.zip.open(info) as f:
                data = f.read(MAX_JSON_MEMBER_BYTES + 1)
        except (zipfile.BadZipFile, zlib.error, OSError, EOFError) as exc:
            raise BundleError(f"cannot be read from the zip ({exc}): its bytes were changed in the file") from exc
        if len(data) > MAX_JSON_MEMBER_BYTES:
            raise BundleError(f"{name} is over {MAX_JSON_MEMBER_BYTES:,} bytes")
        return data

    def rows(self, name: str) -> Iterator[tuple[int, Any]]:
        """(line number from 1, parsed value) of a JSON-lines member.

        Raises:
            ValueError: a line is not JSON (the message names the line)."""
        for number, line in enumerate(self.read(name).decode("utf-8").splitlines(), start=1):
            try:
                yield number, json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"row {number} is not JSON ({exc.msg})") from exc


__all__ = [
    "ARTIFACTS_DIR",
    "ARTIFACT_INDEX",
    "CHAINED",
    "CREDENTIALS",
    "FORMAT",
    "FORMAT_VERSION",
    "HEADS",
    "INHERITED",
    "LINEAGE",
    "MANIFEST",
    "PRINCIPALS",
    "READABLE_VERSIONS",
    "RUN_TABLES",
    "SIGNATURE",
    "SIGNING_PREFIX",
    "UNCHAINED",
    "BundleError",
    "BundleReader",
    "Member",
    "jsonl",
    "manifest_bytes",
    "run_dir",
    "signed_message",
]
