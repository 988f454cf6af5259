"""Ed25519 keys (from `cryptography`): making a key pair, keeping the private half in a file only
its owner can read, signing records with it, and checking a signature against a public key.

Who holds what: the private key stays in the person's file (`$LONGRUN_KEYS_DIR/NAME.pem`, else
`$LONGRUN_HOME/keys/NAME.pem`, or a path they choose), created with mode 0600 in a 0700 folder;
Postgres holds only the public key and its id (the first 32 hex digits of the SHA-256 of the raw
public key). Nothing secret ever goes into a workflow update, the audit or a log: a proof is a
record, a signature and a key id.
"""

from __future__ import annotations

import base64
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from longrun.errors import ConfigError
from longrun.models.canonical import sha256_hex
from longrun.models.signed import Proof, SignableRecord

KEYS_DIR_ENV = "LONGRUN_KEYS_DIR"


def keys_dir() -> Path:
    """Where private keys live by default: `$LONGRUN_KEYS_DIR`, else `$LONGRUN_HOME/keys`."""
    explicit = os.environ.get(KEYS_DIR_ENV)
    if explicit:
        return Path(explicit).expanduser().resolve()
    return Path(os.environ.get("LONGRUN_HOME", ".longrun")).resolve() / "keys"


def default_key_path(principal: str) -> Path:
    return keys_dir() / f"{principal}.pem"


def raw_public(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id_of(key: Ed25519PublicKey) -> str:
    """The id a public key is registered and named by."""
    return sha256_hex(raw_public(key))[:32]


def public_pem(key: Ed25519PublicKey) -> str:
    return key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def load_public_pem(text: str) -> Ed25519PublicKey:
    """A public key from PEM text.

    Raises:
        ConfigError: the text is not an Ed25519 public key."""
    try:
        key = serialization.load_pem_public_key(text.encode())
    except ValueError as exc:
        raise ConfigError(f"not a PEM public key: {exc}") from exc
    if not isinstance(key, Ed25519PublicKey):
        raise ConfigError(f"the public key is {type(key).__name__}, not Ed25519; make one with `longrun approvers add`")
    return key


def write_private_key(key: Ed25519PrivateKey, path: Path) -> None:
    """Write the private key (PKCS#8 PEM) to a new file only its owner can read.

    Raises:
        ConfigError: the file exists already (a key is never overwritten: revoke it first and
            choose another path)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError as exc:
        raise ConfigError(f"{path} exists already; a key file is never overwritten: pass --key-file with a new path "
                          "(and `longrun approvers revoke` the old key if it should no longer sign)") from exc
    with os.fdopen(fd, "wb") as f:
        f.write(pem)


def verify_signature(public: Ed25519PublicKey, payload: str, signature: bytes) -> bool:
    try:
        public.verify(signature, payload.encode("utf-8"))
    except InvalidSignature:
        return False
    return True


@dataclass(frozen=True)
class Signer:
    """A principal's private key, loaded for signing records."""

    principal: str
    key: Ed25519PrivateKey
    path: Path | None = None

    @property
    def key_id(self) -> str:
        return key_id_of(self.key.public_key())

    @classmethod
    def load(cls, principal: str, path: Path | None = None) -> Signer:
        """The private key of `principal` from `path` (default: `default_key_path`).

        Raises:
            ConfigError: no such file, a file others can read, or not an Ed25519 private key;
                the message says how to get a key.
        """
        where = path or default_key_path(principal)
        if not where.is_file():
            raise ConfigError(
                f"no private key for {principal!r} at {where}: `--as NAME` alone approves nothing; a decision must be "
                f"signed with the key registered for {principal}. Create one with `longrun approvers add {principal}` "
                "(it writes the key there), or pass --key PATH to the key you were given"
            )
        mode = stat.S_IMODE(where.stat().st_mode)
        if mode & 0o077:
            raise ConfigError(f"{where} can be read by others (mode {mode:o}); run `chmod 600 {where}` and try again")
        try:
            key = serialization.load_pem_private_key(where.read_bytes(), password=None)
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"{where} is not an unencrypted PEM private key: {exc}") from exc
        if not isinstance(key, Ed25519PrivateKey):
            raise ConfigError(f"{where} holds a {type(key).__name__}, not an Ed25519 key")
        return cls(principal=principal, key=key, path=where)

    def sign(self, record: SignableRecord) -> Proof:
        """The proof for `record`, which must name this signer's principal and key."""
        if record.principal != self.principal or record.key_id != self.key_id:
            raise ValueError("a signer signs only records that name its own principal and key")
        payload = record.canonical()
        signature = self.key.sign(payload.encode("utf-8"))
        return Proof(payload=payload, signature=base64.b64encode(signature).decode(), key_id=self.key_id)


def new_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


__all__ = [
    "KEYS_DIR_ENV",
    "Signer",
    "default_key_path",
    "key_id_of",
    "keys_dir",
    "load_public_pem",
    "new_key",
    "public_pem",
    "raw_public",
    "verify_signature",
    "write_private_key",
]
