"""Console keys sealed at rest (`longrun.auth.sealed`): a password opens its own seal and nothing
else, a seal moved to another principal or key does not open, and a session's seal opens only
with its token."""

from __future__ import annotations

import pytest

from longrun.auth import key_id_of, new_key
from longrun.auth.keys import raw_public
from longrun.auth.sealed import (
    check_password,
    csrf_token,
    open_for_session,
    open_with_password,
    seal_for_session,
    seal_with_password,
    token_sha256,
)
from longrun.errors import ConfigError


def test_a_password_opens_its_own_seal_only() -> None:
    key = new_key()
    kid = key_id_of(key.public_key())
    seal = seal_with_password(key, "correct horse battery", principal="alice", key_id=kid)
    assert b"correct horse" not in seal.sealed_key + seal.salt + seal.nonce
    opened = open_with_password(seal, "correct horse battery", principal="alice", key_id=kid)
    assert opened is not None and raw_public(opened.public_key()) == raw_public(key.public_key())
    assert open_with_password(seal, "correct horse batterY", principal="alice", key_id=kid) is None
    assert open_with_password(seal, "correct horse battery", principal="mallory", key_id=kid) is None
    assert open_with_password(seal, "correct horse battery", principal="alice", key_id="0" * 32) is None
    other = seal_with_password(key, "correct horse battery", principal="alice", key_id=kid)
    assert other.salt != seal.salt and other.sealed_key != seal.sealed_key  # fresh salt and nonce each time


def test_a_session_seal_opens_with_its_token_only() -> None:
    key = new_key()
    kid = key_id_of(key.public_key())
    nonce, sealed = seal_for_session(key, "token-a", principal="alice", key_id=kid)
    assert open_for_session(nonce, sealed, "token-a", principal="alice", key_id=kid) is not None
    assert open_for_session(nonce, sealed, "token-b", principal="alice", key_id=kid) is None
    assert open_for_session(nonce, sealed, "token-a", principal="bob", key_id=kid) is None
    assert token_sha256("token-a") != token_sha256("token-b") and len(token_sha256("x")) == 64
    assert csrf_token("token-a") == csrf_token("token-a") != csrf_token("token-b")


def test_short_passwords_are_refused() -> None:
    with pytest.raises(ConfigError, match="at least 12 characters"):
        check_password("short")
    with pytest.raises(ConfigError):
        seal_with_password(new_key(), "elevenchars", principal="a", key_id="0" * 32)
