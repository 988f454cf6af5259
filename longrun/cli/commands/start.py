"""`longrun start`: a run spec from the command line (the rules the console's `POST /api/runs`
follows too, `longrun.client.start_request`), the run recorded and its workflow started, and
optionally followed until it needs a human (`--wait`).

Apart from `runs` (status, watch, runs) because of what it imports: the start request's rules,
the MCP and webhook settings and the context pipeline are for starting only.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from pathlib import Path

from pydantic import ValidationError

from longrun.cli.commands.common import (
    EXIT_FAIL,
    EXIT_OK,
    CliError,
    model_label,
    print_json,
    say,
    settings,
    stack,
    usage_error,
)
from longrun.cli.commands.watch import Watcher
from longrun.client import runs as client_runs
from longrun.client import start_request
from longrun.client.start_request import DirtyWorkspace, InvalidStart, StartRequest
from longrun.errors import StoreError
from longrun.mcp import cli as mcp_cli
from longrun.models.run import RunStatus
from longrun.models.spec import RunSpec
from longrun.webhooks.config import url_variable

CLI_FLAGS = {"constraints": "--constraint", "approvers": "--approver", "allow_commands": "--allow-command",
             "webhooks": "--webhook"}


def flag(field: str) -> str:
    """How the command line spells a `StartRequest` field."""
    return CLI_FLAGS.get(field, "--" + field.replace("_", "-"))


def build_spec(args: argparse.Namespace) -> RunSpec:
    """The run spec from the command line (`start_request.build_spec`, the rules the console's
    `POST /api/runs` follows too); a usage error (exit 2, nothing written) when invalid."""
    fields = {"objective": args.objective, "workspace": args.workspace, "constraints": args.constraint,
              "approvers": args.approver, "allow_commands": args.allow_command, "webhooks": args.webhook,
              **{name: getattr(args, name) for name in (
                  "model", "base_url", "context_window", "budget", "trigger", "summary_model", "context_mode",
                  "provider_compaction", "approval_ttl", "max_turns", "max_cost", "sandbox", "allow_network", "in_place", "mcp",
                  "mcp_read_only", "mcp_idempotent")}}
    try:
        mcp_cli.servers(args)  # the removed --mcp-env / --mcp-header flags: say where their setting went
        req = StartRequest(**fields)
        return start_request.build_spec(req, settings(), default_approver=getpass.getuser(), flag=flag)
    except ValidationError as exc:
        problems = "; ".join(f"{flag(str(e['loc'][0])) if e['loc'] else 'spec'}: {e['msg']}" for e in exc.errors())
        raise usage_error(f"invalid run: {problems} (nothing was started)") from exc
    except ValueError as exc:
        raise usage_error(f"{exc} (nothing was started)") from exc
    except DirtyWorkspace as exc:
        raise CliError(str(exc)) from exc
    except InvalidStart as exc:
        raise usage_error(str(exc)) from exc


def refuse_dirty_workspace(workspace: Path) -> None:
    """`start_request.refuse_dirty_workspace`, as a CLI error (exit 1)."""
    try:
        start_request.refuse_dirty_workspace(workspace, settings(), flag)
    except DirtyWorkspace as exc:
        raise CliError(str(exc)) from exc


async def cmd_start(args: argparse.Namespace) -> int:
    spec = build_spec(args)
    cfg = settings()
    queue = args.task_queue or cfg.task_queue
    async with stack() as (client, store):
        assert client is not None
        if args.run_id:
            try:
                store.get_run(args.run_id)
            except StoreError:
                pass
            else:
                raise usage_error(f"run {args.run_id} already exists; choose another --run-id")
        run_id = await client_runs.start_run(client, store, spec, task_queue=queue, run_id=args.run_id)
        if args.json:
            print_json({"run_id": run_id})
        else:
            say(run_id)
            print(f"started on task queue {queue!r} with model {model_label(spec.model)}; approvers: "
                  f"{', '.join(spec.approvers)}", file=sys.stderr)
            from longrun.providers.registry import start_notes

            for note in start_notes(spec.model, os.environ):
                print(f"note: {note}", file=sys.stderr)
            if spec.model.startswith("openai-compatible:"):
                url = spec.base_url or f"the workers' LONGRUN_OPENAI_BASE_URL ({cfg.compatible_base_url or 'unset here'})"
                window = f"{spec.context_window:,}" if spec.context_window else "32,768 (the default: --context-window)"
                print(f"note: server {url}; window {window} tokens", file=sys.stderr)
            for name in (n for n in spec.webhooks if not os.environ.get(url_variable(n))):
                print(f"note: {url_variable(name)} is not set here; the workers need it to notify webhook {name}",
                      file=sys.stderr)
            if spec.mcp_servers and not cfg.mcp_servers:
                print(f"note: the workers must offer MCP server(s) {', '.join(s.name for s in spec.mcp_servers)} "
                      "(LONGRUN_MCP_<NAME> or LONGRUN_MCP_CONFIG where they run); one they lack is skipped, and "
                      "the audit says why", file=sys.stderr)
            if spec.sandbox == "none" and not cfg.unsandboxed_allowed():
                print("note: workers run a `sandbox: none` run only with LONGRUN_ALLOW_UNSANDBOXED=1 (not set here); "
                      "elsewhere it fails at its start", file=sys.stderr)
            print(f"follow it: longrun watch {run_id}", file=sys.stderr)
        if not args.wait:
            return EXIT_OK
        watcher = Watcher(client, store, run_id, emit=(lambda line: print(line, file=sys.stderr, flush=True))
                          if args.json else say)
        final = await watcher.follow(lambda s: s.status in (RunStatus.waiting_approval, RunStatus.paused))
        if args.json:
            print_json({"run_id": run_id, "status": final.status.value, "reason": final.reason,
                        "pending_approval": final.pending_approval})
        return EXIT_FAIL if final.status in (RunStatus.failed, RunStatus.cancelled) else EXIT_OK
