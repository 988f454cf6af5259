"""`run_command`: runs one argv list from the run's allow-list, never through a shell.

Rules:
- The argv must *equal* one of `ToolContext.allowed_commands`: no prefixes, no appended
  arguments (`--output=/etc/x` after an allowed argv is argument injection), no patterns.
- No shell: `;`, `&&`, `|`, `$()`, backticks and newlines inside an element are passed to the
  program literally.
- **A sandbox, always** (`longrun.tools.sandbox`): an allowed command runs code the model can
  change (an approved `conftest.py` runs on `python -m pytest`), so the command runs with a
  read-only root, the workspace read-write, an empty HOME and /tmp, the worker's home and
  `$LONGRUN_HOME` hidden, PATH/HOME/LANG only, no network (or, with `allow_network`, the outside
  but not the host), its own pid namespace, and CPU, memory, file, tmpfs, task and wall-time limits. Where no sandbox works, commands are refused unless the operator chose
  `sandbox: none`.
- **Allow-listed commands must be repeatable** (tests, linters, builds). run_command's effect is
  not observable at a target, so its reconcile always answers "none": after a crash the command
  may run again. Never put a command with a one-time effect (a deploy, a send) on the allow-list;
  write a custom effect tool with a real reconcile for those.

**Nothing that runs later**: auto-run entries (`.git`, `.envrc`, ... at any depth,
`autorun_watch`) that were there before are read-only in the sandbox, and new ones are removed
after the command, which the result's first line (the audit's `tool_ran` summary) says.

The process runs in its own session; on timeout, and when it ends, its whole process group is
killed (and in a sandbox every process it started, through the pid namespace). Output is read
through pipes; at most MAX_OUTPUT_BYTES of each stream is kept (in a temporary file) and the rest
is counted and dropped, so a chatty command can fill neither the worker's memory nor its disk.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path
from typing import IO, Any

from longrun.errors import CommandNotAllowed, SandboxUnavailable
from longrun.models.state import NextAction
from longrun.tools import autorun_watch, sandbox
from longrun.tools._text import cap_bytes, decode
from longrun.tools.base import ReconcileOutcome, Tool, ToolContext, ToolOutcome
from longrun.tools.sandbox_net import network_unavailable

MAX_OUTPUT_BYTES = 200_000
"""Per stream (stdout, stderr)."""
SHELL_SYNTAX = (";", "&", "|", "$(", "`", "\n", ">", "<")
COMMAND_ACTIONS = frozenset({NextAction.inspect, NextAction.test})


def minimal_env(workspace: Path | None = None) -> dict[str, str]:
    """The environment of an allow-listed command: PATH, HOME and LANG, nothing else. HOME is a
    fresh empty directory, never the worker's (`workspace` is accepted for old callers and unused)."""
    return sandbox.minimal_env()


def command_refusal(argv: Any, allowed: list[list[str]]) -> str | None:
    """Why `argv` may not run, or None when it equals an allowed argv exactly."""
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        return "argv must be a non-empty list of strings"
    if any(argv == list(a) for a in allowed):
        return None
    hints = []
    for a in allowed:
        if len(argv) > len(a) and argv[: len(a)] == list(a):
            hints.append(f"arguments {argv[len(a):]!r} were appended to the allowed command {list(a)!r}")
            break
    if any(s in arg for arg in argv for s in SHELL_SYNTAX):
        hints.append("commands run without a shell, so shell syntax (;, &&, |, $(), backticks, newlines) does nothing")
    hint = ("; " + "; ".join(hints)) if hints else ""
    listed = ", ".join(repr(list(a)) for a in allowed) or "none (this run allows no commands)"
    return f"argv {argv!r} is not on this run's allow-list{hint}. Allowed argv lists, exactly: {listed}"


def _check(args: dict[str, Any], ctx: ToolContext) -> str | None:
    refusal = command_refusal(args.get("argv"), ctx.allowed_commands)
    if refusal is None:
        try:
            backend = sandbox.choose(ctx.sandbox.mode)
        except SandboxUnavailable as exc:
            return str(exc)
        if ctx.sandbox.allow_network and backend != "none":
            return network_unavailable()
    return refusal


def _read_capped(f: IO[bytes], size: int) -> tuple[str, str | None]:
    """What was kept of a stream (at most MAX_OUTPUT_BYTES), and a note when `size` (what the command
    wrote) was more or the bytes were not UTF-8."""
    f.seek(0)
    data, cut = cap_bytes(f.read(MAX_OUTPUT_BYTES + 4), MAX_OUTPUT_BYTES)
    text, repaired = decode(data)
    notes = []
    if cut or size > len(data):
        notes.append(f"[truncated: {size} bytes, showing the first {len(data)}]")
    if repaired:
        notes.append("[invalid UTF-8 or NUL bytes were replaced with U+FFFD]")
    text = text.removesuffix("\n")
    return text, "\n".join(notes) or None


def _run_command(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    argv = args["argv"]
    refusal = command_refusal(argv, ctx.allowed_commands)
    if refusal:
        raise CommandNotAllowed(refusal)
    before = autorun_watch.snapshot(ctx.workspace)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            done = sandbox.execute(
                argv, workspace=ctx.workspace, policy=ctx.sandbox, timeout=ctx.command_timeout, stdout=out,
                stderr=err, keep_bytes=MAX_OUTPUT_BYTES + 4, protect=autorun_watch.protected(ctx.workspace, before),
            )
        finally:
            # whatever the command left that would run later, outside the sandbox, goes (even if it failed)
            removed, complete = autorun_watch.remove_new(ctx.workspace, before)
        stdout, out_note = _read_capped(out, done.stdout_bytes)
        stderr, err_note = _read_capped(err, done.stderr_bytes)
    removed_head, removed_note = autorun_watch.notice(removed, complete)
    head = f"exit code: {done.code}{removed_head}"
    if done.timed_out:
        head += f" (timed out after {ctx.command_timeout:g} s; the command was killed)"
    if done.oom_killed:
        head += f" (a process went over the memory limit of {ctx.sandbox.memory_mb} MiB and was killed)"
    parts = [head, "--- stdout ---", stdout, *([out_note] if out_note else []), "--- stderr ---", stderr]
    if err_note:
        parts.append(err_note)
    if removed_note:
        parts.append(removed_note)
    text = "\n".join(parts)
    return ToolOutcome(
        text=text, is_error=done.timed_out, external_id=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        sandbox=sandbox.describe(done.backend, ctx.sandbox),
    )


def _reconcile(args: dict[str, Any], ctx: ToolContext) -> ReconcileOutcome:
    return ReconcileOutcome(
        "none",
        detail=(
            "run_command leaves no trace to check; allow-listed commands must be repeatable, "
            "so the command is treated as not run and may run again"
        ),
    )


RUN_COMMAND = Tool(
    name="run_command",
    description=(
        "Run one command of this run's allow-list (an argv list that must match an allowed one exactly), "
        "in the workspace, without a shell, with a time limit, in a sandbox: only the workspace is writable, "
        "HOME and /tmp start empty, and there is no network unless the run allows it. Output: 'exit code: N', "
        "then '--- stdout ---' and '--- stderr ---' sections."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "argv": {
                "type": "array",
                "items": {"type": "string", "maxLength": 4096},
                "minItems": 1,
                "maxItems": 256,
                "description": "program and arguments, e.g. [\"pytest\", \"-q\"]",
            }
        },
        "required": ["argv"],
        "additionalProperties": False,
    },
    kind="effect",
    needs_approval=False,
    run=_run_command,
    check=_check,
    reconcile=_reconcile,
    allowed_next_actions=COMMAND_ACTIONS,
)
