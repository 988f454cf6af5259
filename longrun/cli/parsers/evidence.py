"""The arguments of `longrun export, verify-bundle`; the handlers are in `longrun.cli.commands.evidence`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from longrun.cli.parsers.common import Handler, add_json
from longrun.evidence.arguments import add_arguments


def register(sub: argparse._SubParsersAction[Any]) -> None:
    e = sub.add_parser(
        "export", help="write a run's whole record to one evidence bundle (a zip anyone can verify)",
        description="One zip file with the run's state versions, transcript, projections, audit rows, facts, "
        "closed items, tools and requests (canonical JSON), the signed decisions with the signers' public keys "
        "and their registration and revocation history, and the chain heads, all read in one snapshot. "
        "`longrun verify-bundle FILE` checks it with no database; docs/EVIDENCE.md lets anyone check it without "
        "longrun.",
    )
    e.add_argument("run", help="run id")
    e.add_argument("-o", "--output", required=True, type=Path, metavar="FILE", help="the bundle to write (never "
                   "overwritten)")
    e.add_argument("--with-artifacts", action="store_true", help="include the bytes of every artifact the runs stored")
    e.add_argument("--family", action="store_true", help="include the run's subagents and forks (and theirs)")
    e.add_argument("--sign-as", metavar="NAME", help="sign the manifest with NAME's key (an operator)")
    e.add_argument("--key", type=Path, metavar="PATH", help="the signing key (default: $LONGRUN_KEYS_DIR/NAME.pem, "
                   "else $LONGRUN_HOME/keys/NAME.pem)")
    add_json(e)
    e.set_defaults(func=Handler("longrun.cli.commands.evidence", "cmd_export"))

    v = sub.add_parser(
        "verify-bundle", help="check an evidence bundle from the file alone (no database, no network)",
        description="Re-checks the manifest's hashes, every hash chain, every signature against the keys in the "
        "bundle (valid when it signed), that every approval and scope a state held was a verified signed "
        "decision, and the bundle's own signature. Exits 1 naming each bad member or row.",
    )
    add_arguments(v)
    v.set_defaults(func=Handler("longrun.cli.commands.evidence", "cmd_verify_bundle"))
