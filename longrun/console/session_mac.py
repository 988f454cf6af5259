"""The console's session MAC: proof that a `console_sessions` row was written by a console.

The app role may write `console_sessions` (the console signs people in with the app role's URL,
like the worker), so a worker that is compromised could insert a row for any principal and hand
itself the cookie whose hash it chose. The session's sealed key would not open, but the row alone
would pass as alice for every read and for `say`. So each row carries an HMAC-SHA256, under a key
only the console holds, over what makes it a session (the token's hash, principal, key id,
created and expiry times); the console checks it with `hmac.compare_digest` on every request and
refuses a row without a valid one.

We chose a MAC over a third database role that alone may write sessions: it needs no change to
how the database is provisioned, and it also catches a row *changed* by the app role (an expiry
moved forward). The key is:

- `LONGRUN_CONSOLE_SECRET` (at least 32 characters) when set: give every console process the same
  value, and none to the workers; or else
- the file `$LONGRUN_HOME/console-session.key` (32 random bytes, hex, mode 0600), created by the
  first `longrun serve`. Console processes that share `$LONGRUN_HOME` share it. Workers must not be
  able to read it: run them as another user (docs/SECURITY.md), whose `$LONGRUN_HOME` is its own.

A row's MAC is stored as `<key fingerprint>:<hex>`, so a console that meets a session signed under
another key can say so (two consoles with different secrets) rather than only "sign in again".
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import stat
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from longrun.errors import ConfigError

SECRET_VARIABLE = "LONGRUN_CONSOLE_SECRET"
KEY_FILE = "console-session.key"
MIN_SECRET_CHARS = 32
_CONTEXT = b"longrun console session mac v1"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _stamp(at: datetime) -> str:
    """A time as whole microseconds since the epoch: the same for the value written and the
    value read back from PostgreSQL, whatever its time zone."""
    if at.tzinfo is None:
        raise ValueError("a session time must be time-zone aware")
    delta = at - _EPOCH
    return str((delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds)


@dataclass(frozen=True)
class SessionMac:
    """Signs and checks session rows under one key."""

    key: bytes

    @property
    def fingerprint(self) -> str:
        """Names the key (not secret): 8 hex characters of its SHA-256."""
        return hashlib.sha256(b"fingerprint|" + self.key).hexdigest()[:8]

    def _digest(self, token_sha256: str, principal: str, key_id: str, created_at: datetime,
                expires_at: datetime) -> str:
        message = "|".join((token_sha256, principal, key_id, _stamp(created_at), _stamp(expires_at))).encode()
        return hmac.new(self.key, _CONTEXT + b"|" + message, hashlib.sha256).hexdigest()

    def sign(self, token_sha256: str, principal: str, key_id: str, created_at: datetime, expires_at: datetime) -> str:
        """The value of a new row's `mac` column."""
        return f"{self.fingerprint}:{self._digest(token_sha256, principal, key_id, created_at, expires_at)}"

    def check(self, mac: str | None, token_sha256: str, principal: str, key_id: str, created_at: datetime,
              expires_at: datetime) -> bool:
        """True if `mac` is this key's MAC over the row (constant-time)."""
        expected = self.sign(token_sha256, principal, key_id, created_at, expires_at)
        return hmac.compare_digest((mac or "").encode(), expected.encode())

    def other_key(self, mac: str | None) -> bool:
        """True if `mac` was made under another console's key (a configuration mismatch)."""
        return bool(mac) and not (mac or "").startswith(self.fingerprint + ":")


def _from_file(path: Path) -> bytes:
    info = path.stat()
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(f"{path} is readable by others: `chmod 600 {path}` (it signs console sessions)")
    text = path.read_text().strip()
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) < 32:
        raise ConfigError(f"{path} does not hold a console session key (64 hex characters): remove it and "
                          "start `longrun serve` again to make a new one (everyone signs in again)")
    return key


def load_session_mac(home: Path) -> SessionMac:
    """The console's session key: `LONGRUN_CONSOLE_SECRET`, else `home/console-session.key`,
    made on first use (written whole to a temporary file and linked into place, so two consoles
    starting at once end up with the same key).

    Raises:
        ConfigError: the secret is too short, or the key file is readable by others or malformed.
    """
    secret = os.environ.get(SECRET_VARIABLE)
    if secret:
        if len(secret) < MIN_SECRET_CHARS:
            raise ConfigError(f"{SECRET_VARIABLE} needs at least {MIN_SECRET_CHARS} characters "
                              "(e.g. `python -c 'import secrets; print(secrets.token_hex(32))'`)")
        return SessionMac(hashlib.sha256(_CONTEXT + b"|secret|" + secret.encode()).digest())
    path = home / KEY_FILE
    if not path.exists():
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        temporary = home / f".{KEY_FILE}.{secrets.token_hex(8)}"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(32) + "\n")
            with contextlib.suppress(FileExistsError):  # another console made it first: use theirs
                os.link(temporary, path)
        finally:
            temporary.unlink(missing_ok=True)
    return SessionMac(_from_file(path))


__all__ = ["KEY_FILE", "SECRET_VARIABLE", "SessionMac", "load_session_mac"]
