"""The `longrun` command line: one entry point, one subcommand per job.

    longrun dev up|down|status      the embedded stack (PostgreSQL + Temporal dev server)
    longrun worker                  a worker in the foreground (several may run)
    longrun start ...               start a run (prints its id)
    longrun status|watch RUN        where a run stands / follow it live
    longrun approve|reject RUN      answer a pending approval (signed with your key)
    longrun grant|revoke-grant RUN  a signed standing approval for many edits, and its end
    longrun approvers add|list|revoke   principals and their Ed25519 keys
    longrun show RUN [APPROVAL]     the whole of an approval request: arguments, diff, action hash
    longrun diff RUN [--stat]       a run's change set (its git branch): the patch, or its commits
    longrun pause|resume|cancel RUN, longrun say RUN TEXT
    longrun compact-now RUN         compact the run's context after the current turn
    longrun audit RUN [--verify]    the full timeline from PostgreSQL, hash chains checked
    longrun usage RUN               tokens and dollars per model request
    longrun raise-budget RUN --by USD   answer a run that reached its --max-cost (signed)
    longrun export RUN -o FILE      the run's record in one self-verifying file; verify-bundle FILE checks it
    longrun prune --older-than 90d  drop finished runs' bodies, keep their proofs (pin|unpin RUN)
    longrun runs [--tree]           list runs (forks and subagents under their parents)
    longrun fork RUN --at VERSION   a new run from RUN's state at a version (docs/OPERATIONS.md, Fork)
    longrun compact TRANSCRIPT      offline compaction of a transcript
    longrun serve                   the web console and JSON API (127.0.0.1:8780)
    longrun demo                    the whole thing on a sample project, in under two minutes

Exit codes: 0 ok; 1 the operation failed; 2 the command line is wrong (nothing was changed).
docs/CLI.md has every command and flag.

The parser is built from `longrun.cli.parsers`, which imports only the standard library; the
command that runs imports its handler's module (`Handler.resolve`), so `--help` and usage errors
answer at once and `longrun status` loads what `status` needs, not every command's imports.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import os
import sys
from typing import Any

from longrun.cli.commands.common import EXIT_FAIL, EXIT_USAGE, CliError
from longrun.cli.parsers import GROUPS, Handler
from longrun.cli.parsers.common import SCRIPTED_NOTE
from longrun.errors import ApprovalError, ConfigError, LongrunError, RunNotFoundError, StackNotRunning


class _Parser(argparse.ArgumentParser):
    """argparse with exit code 2 and a hint to --help on every usage error."""

    def error(self, message: str) -> Any:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n(see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="longrun",
        description="Durable, auditable long-running LLM agent jobs on Temporal and PostgreSQL.",
        epilog=f"Models: {SCRIPTED_NOTE}; anthropic:MODEL calls Claude (needs ANTHROPIC_API_KEY). "
        "Exit codes: 0 ok, 1 failure, 2 usage. Start with `longrun demo`.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=_Parser)
    for group in GROUPS:
        group.register(sub)
    return parser


def _run(handler: Handler, args: argparse.Namespace) -> int:
    func = handler.resolve()
    if inspect.iscoroutinefunction(func):
        return int(asyncio.run(func(args)))
    return int(func(args))


def main(argv: list[str] | None = None) -> int:
    """Parse `argv` (default: sys.argv[1:]), run the command, return its exit code.

    Called as the `longrun` script (argv None), the process ends with `os._exit` once stdout and
    stderr are flushed: the Temporal client's Rust runtime may still hold a callback into Python
    (a timed-out RPC, a just-started workflow), and a normal interpreter shutdown then aborts with
    "PyGILState_Release ... finalizing" (exit 134) after the command has done its work.
    """
    code = _main(argv)
    tracing = sys.modules.get("longrun.telemetry.tracing")  # imported with the Temporal client, if at all
    if tracing is not None:
        tracing.flush_tracing()  # spans of this command (a start, an approval) are exported before `os._exit`
    if argv is None and "temporalio.bridge.client" in sys.modules:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    prog = f"longrun {args.command}"
    try:
        return int(_run(args.func, args) or 0)
    except CliError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return exc.code
    except ConfigError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (RunNotFoundError, StackNotRunning, ApprovalError, LongrunError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return EXIT_FAIL
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        pydantic = sys.modules.get("pydantic")  # only a handler that imported it can raise its errors
        if pydantic is None or not isinstance(exc, pydantic.ValidationError):
            raise
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        print(f"{prog}: invalid input: {problems}", file=sys.stderr)
        return EXIT_USAGE

