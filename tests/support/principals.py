"""Test principals: registered in the template database every test clones, with their private
keys in one folder for the session (`LONGRUN_KEYS_DIR`), so a test approves as "alice" the way a
person would: with her key file, through the real signing and verification path."""

from __future__ import annotations

from pathlib import Path

from longrun.auth import Signer, key_id_of, new_key, public_pem, write_private_key
from longrun.store import Store

TEST_PRINCIPALS = ("alice", "bob", "mallory")
"""alice and bob approve runs in the tests; mallory has a valid key but is nobody's approver."""


def register(store: Store, keys_dir: Path, name: str, *, roles: tuple[str, ...] = ("viewer", "approver"),
             key_file: Path | None = None) -> Signer:
    """A principal with a fresh key: public half in Postgres, private half in `keys_dir`."""
    key = new_key()
    path = key_file or keys_dir / f"{name}.pem"
    write_private_key(key, path)
    store.add_principal(name, list(roles), actor="tests")
    store.add_credential(name, key_id_of(key.public_key()), public_pem(key.public_key()), expires_at=None)
    return Signer(principal=name, key=key, path=path)


def seed(url: str, keys_dir: Path) -> None:
    with Store.from_url(url) as store:
        for name in TEST_PRINCIPALS:
            register(store, keys_dir, name)
