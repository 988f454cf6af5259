"""Principals and keys in PostgreSQL: only public keys are stored; only the schema owner registers
or revokes them (a worker's app role can read them and nothing more); a credential is never
changed or deleted, only revoked once; a private key file is readable by its owner alone and is
never overwritten."""

from __future__ import annotations

import secrets
import stat

import psycopg
import pytest
from psycopg import errors

from longrun.auth import Signer, key_id_of, new_key, public_pem, write_private_key
from longrun.errors import AppendOnlyViolation, ConfigError
from longrun.store import InvalidInputError, Store, libpq_url
from longrun.store.roles import app_role_name, app_role_url, ensure_login


@pytest.fixture
def app_url(db_url: str) -> str:
    password = secrets.token_hex(12)
    ensure_login(db_url, password=password)
    return app_role_url(db_url, password=password)


def test_the_app_role_reads_keys_but_cannot_register_change_or_revoke_one(db_url: str, app_url: str) -> None:
    with Store.from_url(app_url) as app:
        listed = {name for name, _roles, _at, _creds in app.principals()}
        assert {"alice", "bob", "mallory"} <= listed, "the app role reads who may approve"
        key = new_key()
        with pytest.raises(Exception, match="permission denied"):
            app.add_principal("intruder", ["approver"], actor="worker")
        with pytest.raises(Exception, match="permission denied"):
            app.add_credential("alice", key_id_of(key.public_key()), public_pem(key.public_key()), expires_at=None)
        with pytest.raises(Exception, match="permission denied"):
            app.revoke_credentials("alice")
    with psycopg.connect(libpq_url(app_url), autocommit=True) as conn:
        assert conn.execute("SELECT current_user").fetchone()[0] == app_role_name()
        for sql in ("UPDATE credentials SET public_key = 'x'", "DELETE FROM credentials",
                    "UPDATE principals SET roles = '{approver}'", "DELETE FROM principals"):
            with pytest.raises(errors.InsufficientPrivilege):
                conn.execute(sql)


def test_a_credential_is_only_ever_revoked_once(store: Store) -> None:
    alice = Signer.load("alice")
    with pytest.raises(AppendOnlyViolation, match="only revoked, once"):
        with store.transaction("swap alice's key") as s:
            from sqlalchemy import text

            s.execute(text("UPDATE credentials SET public_key = 'x' WHERE principal = 'alice'"))
    with pytest.raises(AppendOnlyViolation):
        with store.transaction("delete alice's key") as s:
            s.execute(text("DELETE FROM credentials WHERE principal = 'alice'"))
    assert store.revoke_credentials("alice", reason="rotated") == [alice.key_id]
    assert store.revoke_credentials("alice") == [], "nothing active is left to revoke"
    with pytest.raises(AppendOnlyViolation):
        with store.transaction("un-revoke") as s:
            s.execute(text("UPDATE credentials SET revoked_at = NULL WHERE principal = 'alice'"))
    credential = store.credential(alice.key_id)
    assert credential is not None and credential.revoked_reason == "rotated"
    assert store.approver_problems(["alice", "bob", "nobody"]) == [
        "'alice' has no active key: `longrun approvers add alice --new-key` registers one",
        "'nobody' is not a principal: `longrun approvers add nobody` creates one with a key",
    ]


def test_only_public_keys_are_stored(store: Store) -> None:
    with store.engine.connect() as conn:
        from sqlalchemy import text

        keys = conn.execute(text("SELECT public_key FROM credentials")).scalars().all()
    assert keys and all(k.startswith("-----BEGIN PUBLIC KEY-----") and "PRIVATE" not in k for k in keys)
    with pytest.raises(InvalidInputError, match="registered already"):
        alice = Signer.load("alice")
        store.add_credential("alice", alice.key_id, public_pem(alice.key.public_key()), expires_at=None)
    with pytest.raises(InvalidInputError, match="principal name"):
        store.add_principal("no spaces please", ["approver"], actor="t")


def test_a_private_key_file_is_the_owners_alone_and_never_overwritten(tmp_path) -> None:
    path = tmp_path / "keys" / "zoe.pem"
    key = new_key()
    write_private_key(key, path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    with pytest.raises(ConfigError, match="never overwritten"):
        write_private_key(new_key(), path)
    assert Signer.load("zoe", path).key_id == key_id_of(key.public_key())
    path.chmod(0o644)
    with pytest.raises(ConfigError, match="can be read by others"):
        Signer.load("zoe", path)
    with pytest.raises(ConfigError, match="`--as NAME` alone approves nothing"):
        Signer.load("zoe", tmp_path / "missing.pem")
