"""The arguments of `longrun start, status, watch, runs`; the handlers are in `longrun.cli.commands.start`
(start) and `longrun.cli.commands.runs` (status, watch, runs)."""

from __future__ import annotations

import argparse
from typing import Any

from longrun.cli.parsers.common import SCRIPTED_NOTE, Handler, add_json

# the run spec's sandbox modes (`longrun.tools.sandbox.SANDBOX_MODES`), spelled out here so that parsing
# does not import the tools; tests/test_cli_parsers.py holds them equal
SANDBOX_MODES = ("auto", "bwrap", "unshare", "none")


def register(sub: argparse._SubParsersAction[Any]) -> None:
    st = sub.add_parser(
        "start", help="start a run and print its id",
        description="Record a run in PostgreSQL and start its workflow; a worker (`longrun worker`) runs it. "
        f"Prints the run id. The default model is `scripted`: {SCRIPTED_NOTE}.",
    )
    st.add_argument("--objective", required=True, help="what the run must do (kept verbatim in the task state)")
    st.add_argument("--workspace", required=True, help="the folder the run may read and (with approval) edit")
    st.add_argument("--constraint", action="append", default=[], metavar="TEXT",
                    help="a binding constraint, kept verbatim in every request (repeatable); the scripted agent runs "
                    "tests only when told: --constraint 'tests: python -m pytest -q'")
    st.add_argument("--approver", action="append", default=[], metavar="NAME",
                    help="who may approve or reject actions (repeatable; default: your user name)")
    st.add_argument("--allow-command", action="append", default=[], metavar='"CMD ARGS"',
                    help="an exact argv run_command may execute, split like a shell would, never run through one "
                    "(repeatable)")
    st.add_argument("--model", help="`scripted` (a deterministic offline stand-in for a model, not an LLM), "
                    "`anthropic:MODEL` (e.g. anthropic:claude-sonnet-4-6; the workers need ANTHROPIC_API_KEY), "
                    "`openai:MODEL` (Responses API; the workers need OPENAI_API_KEY), `openai-compatible:MODEL` (a "
                    "Chat Completions server: vLLM, Ollama, llama.cpp, a LiteLLM proxy, OpenRouter; see --base-url), "
                    "`bedrock:MODEL-ID` or `vertex:MODEL-ID` (Claude on AWS / Google Cloud). "
                    "Default: $LONGRUN_MODEL, else Claude when ANTHROPIC_API_KEY is set, else scripted")
    st.add_argument("--base-url", metavar="URL",
                    help="openai-compatible only: the server's OpenAI base URL, e.g. http://127.0.0.1:11434/v1 "
                    "(kept in the run's spec; default: the workers' LONGRUN_OPENAI_BASE_URL). The workers connect "
                    "only to their LONGRUN_OPENAI_BASE_URL or a URL their LONGRUN_ALLOWED_BASE_URLS lists. Its key, "
                    "if it needs one, is the workers' LONGRUN_OPENAI_API_KEY")
    st.add_argument("--context-window", type=int, metavar="TOKENS",
                    help="openai-compatible only: the window the server was started with (default 32768)")
    st.add_argument("--budget", type=int, metavar="TOKENS", help="most tokens one model request may take")
    st.add_argument("--trigger", type=int, metavar="TOKENS",
                    help="compact when a request exceeds this many tokens (default: min(100k, 75%% of the budget))")
    st.add_argument("--summary-model", metavar="MODEL",
                    help="model of the context's summaries, e.g. a cheaper anthropic:claude-haiku-4-5, or `scripted` "
                    "for the extractive summary (default: the run's model)")
    st.add_argument("--context-mode", choices=("client", "provider", "hybrid"),
                    help="who manages context pressure: client (longrun's pipeline, the default), provider (Anthropic's "
                    "tool-result clearing, OpenAI's compaction; longrun compacts only over the hard limit or after an "
                    "overflow) or hybrid (both); see docs/CONTEXT.md, Modes")
    st.add_argument("--provider-compaction", action="store_true",
                    help="with --context-mode provider or hybrid on Claude: also Anthropic's server compaction")
    st.add_argument("--approval-ttl", metavar="DURATION", help="how long an approval request waits (default 30m)")
    st.add_argument("--max-turns", type=int, metavar="N", help="stop the run after N turns (default 200)")
    st.add_argument("--max-cost", type=float, metavar="USD", help="budget in US dollars for the run and its subagents, "
                    "checked before every model call; reaching it waits for `longrun raise-budget` (default: none)")
    st.add_argument("--sandbox", choices=SANDBOX_MODES,
                    help="where run_command runs: bwrap, unshare, none (no sandbox: commands see what the worker "
                    "sees; only on workers with LONGRUN_ALLOW_UNSANDBOXED=1), or auto (default: the worker's "
                    "LONGRUN_SANDBOX, else bwrap, else unshare, else refused)")
    st.add_argument("--allow-network", action="store_true", help="commands keep the network (default: none)")
    st.add_argument("--webhook", action="append", default=[], metavar="NAME",
                    help="a webhook told about approvals, questions and the end of the run (repeatable); the workers "
                    "read its URL and secret from LONGRUN_WEBHOOK_<NAME>_URL and _SECRET (docs/NOTIFICATIONS.md)")
    st.add_argument("--in-place", action="store_true",
                    help="edit the workspace folder itself even when it is in a git repository (default: the run gets "
                    "a branch longrun/RUN in a worktree under $LONGRUN_HOME, one commit per edit; `longrun diff RUN`)")
    add_mcp_arguments(st)
    st.add_argument("--task-queue", help="task queue of the workers (default $LONGRUN_TASK_QUEUE, else 'longrun')")
    st.add_argument("--run-id", help=argparse.SUPPRESS)
    st.add_argument("--wait", action="store_true",
                    help="follow the run's progress until it ends or needs a human (an approval, a pause)")
    add_json(st)
    st.set_defaults(func=Handler("longrun.cli.commands.start", "cmd_start"))

    s = sub.add_parser("status", help="a run's status, from the live workflow or, once it is gone, from PostgreSQL",
                       description="Status, step, next action, state version, pending approval (id, tool, "
                       "arguments, expiry), turn, tokens and the last compaction. Works from PostgreSQL alone when "
                       "Temporal no longer has the run.")
    s.add_argument("run", help="run id")
    add_json(s)
    s.set_defaults(func=Handler("longrun.cli.commands.runs", "cmd_status"))

    w = sub.add_parser("watch", help="follow a run live until it ends",
                       description="Print a run's progress until it ends: turn, step, next action, the context "
                       "meter after each model request (the trigger marked ┃), compactions as they happen, and a "
                       "pending approval with the command that answers it. Exit 0 when the run completes, 1 when "
                       "it fails or is cancelled. With --json: one JSON object per line.")
    w.add_argument("run", help="run id")
    w.add_argument("--interval", type=float, default=0.5, help="seconds between polls (default 0.5)")
    add_json(w)
    w.set_defaults(func=Handler("longrun.cli.commands.runs", "cmd_watch"))

    r = sub.add_parser("runs", help="list runs, newest first", description="List runs recorded in PostgreSQL.")
    r.add_argument("--limit", type=int, default=20, help="how many (default 20)")
    r.add_argument("--tree", action="store_true", help="forks and subagents indented under the run they came from")
    add_json(r)
    r.set_defaults(func=Handler("longrun.cli.commands.runs", "cmd_runs"))


def add_mcp_arguments(parser: argparse.ArgumentParser) -> None:
    """`--mcp NAME` and the tool declarations (read by `longrun.mcp.cli.servers`)."""
    parser.add_argument("--mcp", action="append", default=[], metavar="NAME",
                        help="an MCP tool server the workers offer (repeatable; configured on the worker with "
                        "LONGRUN_MCP_<NAME> or LONGRUN_MCP_CONFIG); its tools appear as mcp__NAME__TOOL, each an "
                        "effect needing approval unless --mcp-read-only names it")
    parser.add_argument("--mcp-read-only", action="append", default=[], metavar="NAME:TOOL",
                        help="declare a tool read-only: it runs without approval (the server's own readOnlyHint "
                        "is never trusted for this)")
    parser.add_argument("--mcp-idempotent", action="append", default=[], metavar="NAME:TOOL",
                        help="declare an effect tool safe to run twice: an interrupted call may run again instead "
                        "of going to a human")
    # the old flags, kept so that using one says where its setting went, instead of "unrecognized"
    parser.add_argument("--mcp-header", action="append", default=[], help=argparse.SUPPRESS)
    parser.add_argument("--mcp-env", action="append", default=[], help=argparse.SUPPRESS)
