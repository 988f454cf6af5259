"""The arguments of `longrun approve, reject, pause, resume, cancel, say, compact-now`; the handlers are in `longrun.cli.commands.control`."""

from __future__ import annotations

import argparse
from typing import Any

from longrun.cli.parsers.common import Handler, add_json, add_signer_args


def register(sub: argparse._SubParsersAction[Any]) -> None:
    ap = sub.add_parser("approve", help="approve the pending action of a run",
                        description="Approve the action a run waits on. APPROVAL defaults to the pending one. The "
                        "decision is signed with your key (--as NAME reads $LONGRUN_HOME/keys/NAME.pem, or --key) and "
                        "verified by the worker against the key registered for you; it is bound to that exact tool "
                        "and arguments, is used once, and expires after --ttl.")
    ap.add_argument("run", help="run id")
    ap.add_argument("approval", nargs="?", help="approval id (default: the pending one)")
    add_signer_args(ap)
    ap.add_argument("--ttl", metavar="DURATION", help="how long the approval stays valid (e.g. 30m, 2h; default: the run's)")
    ap.add_argument("--edit", metavar="JSON", help="approve the call with these arguments changed, e.g. "
                    "'{\"new\": \"...\"}' (the agent is told what you changed)")
    add_json(ap)
    ap.set_defaults(func=Handler("longrun.cli.commands.control", "cmd_approve"))

    rj = sub.add_parser("reject", help="reject the pending action of a run",
                        description="Reject the action a run waits on; the agent is told the reason and moves on.")
    rj.add_argument("run", help="run id")
    rj.add_argument("approval", nargs="?", help="approval id (default: the pending one)")
    add_signer_args(rj)
    rj.add_argument("--reason", required=True, help="why (the agent reads it)")
    add_json(rj)
    rj.set_defaults(func=Handler("longrun.cli.commands.control", "cmd_reject"))

    for action, text in (
        ("pause", "pause a run at the next turn boundary"),
        ("resume", "resume a paused run"),
        ("cancel", "cancel a run at the next safe point (an effect in flight settles first)"),
    ):
        p = sub.add_parser(action, help=text, description=text[0].upper() + text[1:] + ".")
        p.add_argument("run", help="run id")
        add_json(p)
        p.set_defaults(func=Handler("longrun.cli.commands.control", "cmd_control"), action=action)

    sy = sub.add_parser("say", help="send the agent an instruction (or a new constraint)",
                        description="Queue a message for the agent's next turn. With --constraint it becomes a "
                        "binding constraint, kept verbatim in every request; a pending approval is then voided and "
                        "the action must be proposed again.")
    sy.add_argument("run", help="run id")
    sy.add_argument("text", help="what to tell the agent")
    sy.add_argument("--constraint", action="store_true", help="record the text as a binding constraint")
    add_json(sy)
    sy.set_defaults(func=Handler("longrun.cli.commands.control", "cmd_say"))

    cn = sub.add_parser("compact-now", help="ask a run to compact its context after the current turn",
                        description="Ask for an operator compaction: once the current turn's results are committed, "
                        "the run compacts whatever its size (trigger `operator`: every old result the policy allows "
                        "is cleared to a reference and older turns are summarized), then goes on. A run that is "
                        "paused or waits for an approval compacts when it goes on. `watch` and `audit` show the "
                        "compaction (compaction_started, then its outcome).")
    cn.add_argument("run", help="run id")
    add_json(cn)
    cn.set_defaults(func=Handler("longrun.cli.commands.control", "cmd_compact_now"))
