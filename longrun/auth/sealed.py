"""Private keys sealed at rest, for the console: under a person's password, and under a session token.

The console signs decisions for a signed-in person, so it must hold their console key, and it may
hold it in clear nowhere. Two seals, both AES-256-GCM from `cryptography` (authenticated: a wrong
password or token fails the tag rather than yielding a wrong key):

- **password seal** (the key store, `console_keys`): the key is derived from the password with
  scrypt (n=2^15, r=8, p=1: ~32 MiB and ~0.1 s per try, so a stolen table is slow to guess), a
  random 16-byte salt, a random 12-byte nonce. The password is stored nowhere.
- **session seal** (`console_sessions`): the browser's session token is 32 random bytes, so a
  slow KDF adds nothing; HKDF-SHA256 turns it into the AES key. The table holds only the token's
  SHA-256 (to find the row) and the sealed key, so nothing in it can sign without the cookie.

The associated data binds each seal to its principal and key id: a sealed blob moved to another
row does not open.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

from longrun.errors import ConfigError

SCRYPT_PARAMS = {"name": "scrypt", "n": 2**15, "r": 8, "p": 1}
MIN_PASSWORD_CHARS = 12
_SESSION_INFO = b"longrun console session key v1"


@dataclass(frozen=True)
class PasswordSeal:
    """A private key sealed under a password, as `console_keys` stores it."""

    kdf: dict[str, Any]
    salt: bytes
    nonce: bytes
    sealed_key: bytes


def _raw(key: Ed25519PrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption())


def _aad(principal: str, key_id: str) -> bytes:
    return f"longrun-console|{principal}|{key_id}".encode()


def check_password(password: str) -> str:
    """Raises:
    ConfigError: shorter than `MIN_PASSWORD_CHARS`."""
    if len(password) < MIN_PASSWORD_CHARS:
        raise ConfigError(f"a console password needs at least {MIN_PASSWORD_CHARS} characters")
    return password


def _password_key(password: str, salt: bytes, kdf: dict[str, Any]) -> bytes:
    if kdf.get("name") != "scrypt":
        raise ConfigError(f"unknown key derivation {kdf.get('name')!r} in the console key store")
    return Scrypt(salt=salt, length=32, n=int(kdf["n"]), r=int(kdf["r"]), p=int(kdf["p"])).derive(password.encode())


def seal_with_password(key: Ed25519PrivateKey, password: str, *, principal: str, key_id: str) -> PasswordSeal:
    check_password(password)
    salt, nonce = os.urandom(16), os.urandom(12)
    aes = AESGCM(_password_key(password, salt, SCRYPT_PARAMS))
    return PasswordSeal(dict(SCRYPT_PARAMS), salt, nonce, aes.encrypt(nonce, _raw(key), _aad(principal, key_id)))


def open_with_password(seal: PasswordSeal, password: str, *, principal: str, key_id: str) -> Ed25519PrivateKey | None:
    """The key, or None when the password is wrong (or the seal was moved to another row)."""
    aes = AESGCM(_password_key(password, seal.salt, seal.kdf))
    try:
        return Ed25519PrivateKey.from_private_bytes(aes.decrypt(seal.nonce, seal.sealed_key, _aad(principal, key_id)))
    except InvalidTag:
        return None


def token_sha256(token: str) -> str:
    """How a session row is found: the token itself is never stored."""
    return hashlib.sha256(token.encode()).hexdigest()


def _session_key(token: str) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_SESSION_INFO).derive(token.encode())


def seal_for_session(key: Ed25519PrivateKey, token: str, *, principal: str, key_id: str) -> tuple[bytes, bytes]:
    """(nonce, sealed key) for a session row."""
    nonce = os.urandom(12)
    return nonce, AESGCM(_session_key(token)).encrypt(nonce, _raw(key), _aad(principal, key_id))


def open_for_session(nonce: bytes, sealed: bytes, token: str, *, principal: str, key_id: str) -> Ed25519PrivateKey | None:
    try:
        raw = AESGCM(_session_key(token)).decrypt(nonce, sealed, _aad(principal, key_id))
    except InvalidTag:
        return None
    return Ed25519PrivateKey.from_private_bytes(raw)


def csrf_token(token: str) -> str:
    """The CSRF token of a session: derived from the session token (an HMAC-like HKDF output), so
    the server keeps nothing more, and a page from another origin can read neither."""
    return HKDF(algorithm=hashes.SHA256(), length=24, salt=None, info=b"longrun console csrf v1").derive(
        token.encode()).hex()


__all__ = [
    "MIN_PASSWORD_CHARS",
    "PasswordSeal",
    "check_password",
    "csrf_token",
    "open_for_session",
    "open_with_password",
    "seal_for_session",
    "seal_with_password",
    "token_sha256",
]
