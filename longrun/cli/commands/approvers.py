"""`longrun approvers add|list|revoke` (principals and their keys) and `longrun grant` /
`revoke-grant` (standing approvals, signed).

`approvers add NAME` makes an Ed25519 key pair, writes the private key to a file only you can
read (`$LONGRUN_HOME/keys/NAME.pem`, or `--key-file`) and registers the public key in Postgres;
`--public-key FILE` registers a key made elsewhere (the private half never comes near this
machine). Registering and revoking need the schema owner's database URL (the app role may only
read keys): `LONGRUN_OWNER_DATABASE_URL`, else the dev stack's.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from longrun import render
from longrun.auth import default_key_path, key_id_of, new_key, public_pem, write_private_key
from longrun.auth.keys import load_public_pem
from longrun.auth.sealed import check_password, seal_with_password
from longrun.cli.commands.common import (
    EXIT_OK,
    CliError,
    open_store_only,
    print_json,
    say,
    settings,
    stack,
    usage_error,
)
from longrun.client import decide, revocation
from longrun.client.connection import connect_temporal
from longrun.errors import ApprovalError, ConfigError, LongrunError, StoreError
from longrun.store import InvalidInputError, Store, make_engine

OWNER_HINT = ("registering or revoking a key needs the schema owner's database URL (the app role may only read "
              "keys): set LONGRUN_OWNER_DATABASE_URL, or run this where `longrun dev up` wrote $LONGRUN_HOME/stack.json")


@contextmanager
def _owner_store() -> Iterator[Store]:
    url = settings().owner_database_url
    if not url:
        raise CliError(f"no database configured; {OWNER_HINT}")
    store = Store(make_engine(url))
    try:
        yield store
    except StoreError as exc:
        if "permission denied" in str(exc) or "42501" in str(exc):
            raise CliError(f"{exc}; {OWNER_HINT}") from exc
        raise
    finally:
        store.engine.dispose()


def _read_password(from_stdin: bool) -> str:
    if from_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = getpass.getpass("console password: ")
        if getpass.getpass("again: ") != password:
            raise CliError("the two passwords differ; nothing was changed")
    try:
        return check_password(password)
    except ConfigError as exc:
        raise CliError(f"{exc}; nothing was changed", code=2) from exc


def cmd_add_console(args: argparse.Namespace) -> int:
    """A console key for NAME, sealed under a password that is stored nowhere (`auth.sealed`)."""
    if args.public_key is not None or args.key_file is not None or args.expires or args.new_key:
        raise usage_error("--console makes its own key: --public-key, --key-file, --expires and --new-key do not apply")
    password = _read_password(args.password_stdin)
    key = new_key()
    key_id = key_id_of(key.public_key())
    seal = seal_with_password(key, password, principal=args.name, key_id=key_id)
    with _owner_store() as store:
        existing = next((p for p in store.principals() if p[0] == args.name), None)
        roles = args.roles or (list(existing[1]) if existing else ["viewer", "approver"])
        try:
            created = store.add_principal(args.name, roles, actor="cli")
            revoked = store.add_console_key(args.name, key_id, public_pem(key.public_key()), seal)
        except InvalidInputError as exc:
            raise CliError(str(exc)) from exc
        roles = list(next(p for p in store.principals() if p[0] == args.name)[1])
    if args.json:
        print_json({"principal": args.name, "created": created, "roles": roles, "console_key_id": key_id,
                    "revoked": revoked})
        return EXIT_OK
    say(f"{'created' if created else 'updated'} principal {args.name} (roles: {', '.join(sorted(roles))}); console "
        f"key {key_id} registered, sealed under the password (which is stored nowhere)")
    if revoked:
        say(f"revoked the previous console key {', '.join(revoked)}: the old password no longer signs in")
    say("sign in at `longrun serve` (http://127.0.0.1:8780) with this name and password")
    return EXIT_OK


def cmd_add(args: argparse.Namespace) -> int:
    if args.console:
        return cmd_add_console(args)
    if args.password_stdin:
        raise usage_error("--password-stdin goes with --console")
    roles = args.roles or ["viewer", "approver"]
    expires_at = None
    if args.expires:
        try:
            expires_at = datetime.now(UTC) + timedelta(seconds=render.parse_duration(args.expires))
        except ValueError as exc:
            raise usage_error(f"--expires: {exc}") from exc
    if args.public_key is not None and args.key_file is not None:
        raise usage_error("--public-key registers a key made elsewhere; --key-file is where a new key goes: pick one")
    with _owner_store() as store:
        existing = next((p for p in store.principals() if p[0] == args.name), None)
        active = [c for c in existing[3] if c.status_at(datetime.now(UTC)) == "active"] if existing else []
        if active and not args.new_key:
            if existing is not None and args.roles and args.public_key is None and args.key_file is None:
                store.add_principal(args.name, roles, actor="cli")  # only more roles
                say(f"{args.name} now has roles {', '.join(sorted(set(existing[1]) | set(roles)))}; key "
                    f"{active[0].key_id} unchanged")
                return EXIT_OK
            raise CliError(f"{args.name} has an active key ({active[0].key_id}); pass --new-key to add another, or "
                           f"`longrun approvers revoke {args.name}` first")
        key_path = None
        if args.public_key is not None:
            try:
                public = load_public_pem(args.public_key.read_text())
            except OSError as exc:
                raise usage_error(f"--public-key: {exc}") from exc
            except ConfigError as exc:
                raise usage_error(f"--public-key: {exc}") from exc
        else:
            key = new_key()
            public = key.public_key()
            key_path = (args.key_file or default_key_path(args.name)).expanduser().resolve()
            write_private_key(key, key_path)  # first: never a registered key whose private half was lost
        try:
            created = store.add_principal(args.name, roles, actor="cli")
            store.add_credential(args.name, key_id_of(public), public_pem(public), expires_at=expires_at)
        except InvalidInputError as exc:
            if key_path is not None:
                key_path.unlink(missing_ok=True)
            raise CliError(str(exc)) from exc
        except BaseException:
            if key_path is not None:
                key_path.unlink(missing_ok=True)
            raise
    key_id = key_id_of(public)
    if args.json:
        print_json({"principal": args.name, "created": created, "roles": roles, "key_id": key_id,
                    "key_file": str(key_path) if key_path else None,
                    "expires_at": expires_at.isoformat() if expires_at else None})
        return EXIT_OK
    say(f"{'created' if created else 'updated'} principal {args.name} (roles: {', '.join(sorted(set(roles)))}); "
        f"key {key_id} registered" + (f", expires {render.when(expires_at)}" if expires_at else ""))
    if key_path is not None:
        say(f"private key: {key_path} (mode 0600; keep it to yourself: it signs your decisions)")
    return EXIT_OK


def cmd_list(args: argparse.Namespace) -> int:
    store = open_store_only()  # reading keys needs no more than the app role
    try:
        people = store.principals()
    finally:
        store.engine.dispose()
    now = datetime.now(UTC)
    rows: list[dict[str, Any]] = [
        {"principal": name, "roles": list(roles), "key_id": c.key_id, "status": c.status_at(now),
         "created_at": c.created_at.isoformat(), "expires_at": c.expires_at.isoformat() if c.expires_at else None,
         "revoked_at": c.revoked_at.isoformat() if c.revoked_at else None, "revoked_reason": c.revoked_reason}
        for name, roles, _at, creds in people for c in creds]
    rows += [{"principal": name, "roles": list(roles), "key_id": None, "status": "no key", "created_at": None,
              "revoked_reason": ""} for name, roles, _at, creds in people if not creds]
    if args.json:
        print_json({"principals": rows})
        return EXIT_OK
    if not rows:
        say("no principals yet: `longrun approvers add NAME` creates one with a key")
        return EXIT_OK
    say(render.table([(r["principal"], ",".join(r["roles"]), r["key_id"] or "-", r["status"],
                       render.when(datetime.fromisoformat(r["created_at"])) if r["created_at"] else "-",
                       r["revoked_reason"] or "") for r in rows],
                     ["principal", "roles", "key", "status", "registered", "note"]))
    return EXIT_OK


async def cmd_revoke(args: argparse.Namespace) -> int:
    """Revoke the keys, then end the scopes they signed in every run (`longrun.client.revocation`)."""
    with _owner_store() as store:
        try:
            revoked = store.revoke_credentials(args.name, key_id=args.key_id, reason=args.reason)
        except InvalidInputError as exc:
            raise CliError(str(exc)) from exc
        client = None
        if revoked and store.runs_with_open_scopes(revoked):
            try:
                cfg = settings()
                client = await connect_temporal(cfg.temporal_address, cfg.namespace)
            except LongrunError:
                client = None  # no Temporal: the scopes are ended in Postgres directly
        endings = await revocation.end_revoked_scopes(client, store, revoked)
    if args.json:
        print_json({"principal": args.name, "revoked": revoked,
                    "scopes_ended": [{"run_id": e.run_id, "scope_ids": e.scope_ids, "how": e.how} for e in endings]})
    elif revoked:
        say(f"revoked {', '.join(revoked)} of {args.name}: they sign nothing from now on, and nothing they granted "
            "is used from now on (what they signed before stays verifiable)")
        for e in endings:
            for scope_id in e.scope_ids:
                say(f"ended scope {scope_id} of run {e.run_id}"
                    + (" (the run's worker records it)" if e.how == "signalled" else ""))
    else:
        say(f"{args.name} has no active key; nothing to revoke")
    return EXIT_OK


async def cmd_grant(args: argparse.Namespace) -> int:
    try:
        ttl = render.parse_duration(args.ttl)
    except ValueError as exc:
        raise usage_error(f"--ttl: {exc}") from exc
    if args.max_uses < 1:
        raise usage_error("--max-uses must be at least 1")
    async with stack() as (client, store):
        assert client is not None
        store.get_run(args.run)
        try:
            scope_id, answer = await decide.grant_scope(client, store, args.run, args.approver, tools=args.tools,
                                                        paths=args.paths, max_uses=args.max_uses, ttl_seconds=ttl,
                                                        key_path=args.key,
                                                        max_ttl_seconds=settings().scope_max_ttl_seconds)
        except ApprovalError as exc:
            raise CliError(f"grant refused: {exc}") from exc
    if args.json:
        print_json({"run_id": args.run, "scope_id": scope_id, "result": answer})
    else:
        say(answer)
        say(f"end it early with `longrun revoke-grant {args.run} {scope_id} --as {args.approver}`")
    return EXIT_OK


async def cmd_revoke_grant(args: argparse.Namespace) -> int:
    async with stack() as (client, store):
        assert client is not None
        store.get_run(args.run)
        try:
            answer = await decide.revoke_scope(client, store, args.run, args.scope, args.approver, key_path=args.key)
        except ApprovalError as exc:
            raise CliError(f"revoke-grant refused: {exc}") from exc
    if args.json:
        print_json({"run_id": args.run, "scope_id": args.scope, "result": answer})
    else:
        say(answer)
    return EXIT_OK
