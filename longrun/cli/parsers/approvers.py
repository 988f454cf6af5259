"""The arguments of `longrun approvers, grant, revoke-grant`; the handlers are in `longrun.cli.commands.approvers`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from longrun.cli.parsers.common import Handler, add_json, add_signer_args

# the principals' roles (`longrun.auth.check.ROLES`) and the tools a scope may cover
# (`longrun.client.decide.SCOPABLE_TOOLS`), spelled out here so that parsing imports neither;
# tests/test_cli_parsers.py holds them equal
ROLES = ("viewer", "approver", "operator")
SCOPABLE_TOOLS = ("write_file", "apply_patch", "move_path", "delete_path", "make_dir")


def register(sub: argparse._SubParsersAction[Any]) -> None:
    ap = sub.add_parser("approvers", help="principals who may approve: add, list, revoke their keys",
                        description="Principals and their Ed25519 keys. Only the public key is stored in Postgres; "
                        "the private key stays in a file only its owner can read. A run's --approver names principals.")
    asub = ap.add_subparsers(dest="approvers_command", metavar="ACTION", required=True)
    add = asub.add_parser("add", help="create a principal and a key (or register a public key)",
                          description="Create the principal NAME (or give an existing one more roles) and register a "
                          "key for it. Without --public-key, a new key pair is made and the private key written to "
                          "--key-file (default $LONGRUN_KEYS_DIR/NAME.pem, else $LONGRUN_HOME/keys/NAME.pem), mode 0600.")
    add.add_argument("name", help="the principal's name (letters, digits, . _ @ -)")
    add.add_argument("--role", action="append", choices=ROLES, dest="roles",
                     help="a role (repeatable; default: viewer and approver)")
    add.add_argument("--key-file", type=Path, help="where to write the new private key")
    add.add_argument("--public-key", type=Path, metavar="FILE", help="register this PEM public key instead of making one")
    add.add_argument("--expires", metavar="DURATION", help="the key stops signing after this long (e.g. 90d)")
    add.add_argument("--new-key", action="store_true", help="add a key to a principal that has an active one")
    add.add_argument("--console", action="store_true",
                     help="set a console password (`longrun serve`): makes a console key sealed under it; a new "
                     "password revokes the old console key")
    add.add_argument("--password-stdin", action="store_true",
                     help="with --console: read the password from the first line of stdin instead of prompting")
    add_json(add)
    add.set_defaults(func=Handler("longrun.cli.commands.approvers", "cmd_add"))

    ls = asub.add_parser("list", help="principals, roles and keys (active, revoked, expired)")
    add_json(ls)
    ls.set_defaults(func=Handler("longrun.cli.commands.approvers", "cmd_list"))

    rv = asub.add_parser("revoke", help="revoke a principal's keys",
                         description="Revoke NAME's active keys (or --key KEY_ID). A revoked key signs nothing from "
                         "now on, and what it granted is not used from now on: the gate checks the key at every "
                         "use, and the scopes it signed are ended in every run (audited as scope_ended, "
                         "key_revoked). Decisions it signed before stay verifiable.")
    rv.add_argument("name")
    rv.add_argument("--key", dest="key_id", metavar="KEY_ID", help="only this key")
    rv.add_argument("--reason", default="", help="why (kept with the key)")
    add_json(rv)
    rv.set_defaults(func=Handler("longrun.cli.commands.approvers", "cmd_revoke"))

    gr = sub.add_parser("grant", help="give a run a signed standing approval (a scope)",
                        description="A standing approval for many actions: the --tool(s) on workspace paths matching "
                        "--paths globs (* and ? within a segment, ** across), at most --max-uses times, until --ttl. "
                        "The gate checks every use; a constraint added with `say --constraint` ends it.")
    gr.add_argument("run", help="run id")
    gr.add_argument("--tool", action="append", required=True, dest="tools", help="a tool (repeatable): "
                    + ", ".join(SCOPABLE_TOOLS))
    gr.add_argument("--paths", action="append", required=True, metavar="GLOB", help="workspace path glob (repeatable)")
    gr.add_argument("--max-uses", type=int, required=True, help="at most this many actions")
    gr.add_argument("--ttl", required=True, metavar="DURATION",
                    help="how long it stands (e.g. 2h; at most LONGRUN_SCOPE_MAX_TTL, 24h by default)")
    add_signer_args(gr)
    add_json(gr)
    gr.set_defaults(func=Handler("longrun.cli.commands.approvers", "cmd_grant"))

    rg = sub.add_parser("revoke-grant", help="end a standing approval", description="End the scope now (signed).")
    rg.add_argument("run", help="run id")
    rg.add_argument("scope", help="scope id (scp-...)")
    add_signer_args(rg)
    add_json(rg)
    rg.set_defaults(func=Handler("longrun.cli.commands.approvers", "cmd_revoke_grant"))
