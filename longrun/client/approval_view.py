"""What an approver approves, in full: the view behind `longrun show RUN [APPROVAL_ID]`.

The workflow's pending approval carries a 300-character preview of each argument (what crosses
Temporal stays short), but the approval binds the hash of the *whole* arguments. So the view is
built from PostgreSQL: the `approval_requested` event names the action hash, the gate's verdict
with that hash names the call (`run/t<turn>/c<index>`), and the assistant message of that turn in
the transcript holds the call's arguments exactly as the gate hashed them. The view recomputes the
hash from them, so what it shows is provably what an approval would bind.

For file edits (`write_file`, `apply_patch` in each of its shapes) the view adds a unified diff
against the files as they are now on this machine (in the run's worktree when it has a git change
set), for `move_path` git's rename header, for `delete_path` the text removed, and for every file that runs code (`conftest.py`, a Makefile, a git
hook, ...) the reason. A file that holds a private key gets no diff, only a note: a key's text
is shown nowhere (`longrun.redact_files.holds_private_key`). The CLI prints it; the web console
will render the same structure.
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from longrun.errors import ApprovalNotFound, LongrunError, NotRegularFile, ToolError
from longrun.mcp.registry import mcp_for_approver
from longrun.models.audit import (
    ApprovalExpired,
    ApprovalGranted,
    ApprovalRejected,
    ApprovalRequested,
    ChangeSetOpened,
    GateVerdict,
    RunFinished,
)
from longrun.models.blocks import ToolUseBlock
from longrun.models.canonical import action_hash, canonical_json
from longrun.models.tools import RecordedTool
from longrun.redact_files import holds_private_key
from longrun.store import AuditRecord, Store
from longrun.tools import patch
from longrun.tools.autorun import runs_code_warnings
from longrun.tools.base import ToolContext
from longrun.tools.files import MAX_PATCH_FILE_BYTES
from longrun.tools.paths import check_write_path
from longrun.tools.recorded import run_tool_list
from longrun.tools.safe_open import read_regular

Decision = Literal["pending", "granted", "rejected", "expired", "unanswered"]
DIFF_TOOLS = ("write_file", "apply_patch", "move_path", "delete_path", "make_dir")
MAX_LISTED_FILES = 20


@dataclass(frozen=True)
class ApprovalView:
    """One approval request, whole.

    Attributes:
        arguments: the call's full arguments, from the transcript (redacted as stored).
        canonical: `canonical_json(arguments)`, the exact text the action hash covers.
        hash_matches: `action_hash(tool, arguments, state_version)` equals the recorded hash.
        diff: a unified diff of the edit against the file as it is now; None when there is none
            (another tool, or `diff_note` says why).
        runs_code: (path, why) for each file of the call that something runs on its own.
    """

    run_id: str
    approval_id: str
    tool: str
    arguments: dict[str, Any]
    canonical: str
    action_hash: str
    state_version: int
    action_id: str | None
    decision: Decision
    hash_matches: bool
    diff: str | None = None
    diff_note: str | None = None
    runs_code: list[tuple[str, str]] = field(default_factory=list)
    mcp: dict[str, Any] | None = None
    """For an MCP tool: its server, the server's own annotations (hints, never trusted) and its
    description (the server's text), from the run's listing."""

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["runs_code"] = [{"path": p, "why": w} for p, w in self.runs_code]
        return data


def _request(records: list[AuditRecord], approval_id: str | None) -> tuple[int, ApprovalRequested]:
    requests = [(i, r.event) for i, r in enumerate(records) if isinstance(r.event, ApprovalRequested)]
    if approval_id is not None:
        requests = [(i, e) for i, e in requests if e.approval_id == approval_id]
    if not requests:
        raise ApprovalNotFound(
            f"no approval request {approval_id!r} in this run; `longrun status RUN` shows the pending one"
            if approval_id else "this run has no approval request; `longrun status RUN` shows where it stands"
        )
    return requests[-1]


def _decision(records: list[AuditRecord], after: int, approval_id: str) -> Decision:
    for r in records[after + 1:]:
        e = r.event
        if isinstance(e, ApprovalGranted) and e.approval_id == approval_id:
            return "granted"
        if isinstance(e, ApprovalRejected) and e.approval_id == approval_id:
            return "rejected"
        if isinstance(e, ApprovalExpired) and e.approval_id == approval_id:
            return "expired"
        if isinstance(e, (ApprovalRequested, RunFinished)):
            return "unanswered"
    return "pending"


def _action_id(records: list[AuditRecord], before: int, ahash: str) -> str | None:
    verdicts = [r.event for r in records[:before] if isinstance(r.event, GateVerdict) and r.event.action_hash == ahash]
    asked = [v for v in verdicts if v.verdict == "needs_approval"] or verdicts
    return asked[-1].action_id if asked else None


def _call(store: Store, run_id: str, action_id: str) -> tuple[str, dict[str, Any]]:
    try:
        _, t, c = action_id.rsplit("/", 2)
        turn, index = int(t.removeprefix("t")), int(c.removeprefix("c"))
    except ValueError as exc:
        raise ApprovalNotFound(f"the gate's action id {action_id!r} does not name a call") from exc
    for entry in store.transcript(run_id):
        if entry.role == "assistant" and entry.turn == turn:
            uses = [b for b in entry.message.content if isinstance(b, ToolUseBlock)]
            if index < len(uses):
                return uses[index].name, dict(uses[index].input)
    raise ApprovalNotFound(f"the call {action_id} is not in the run's transcript")


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def unified_diff(before: str, after: str, path: str, *, new_file: bool = False, deleted: bool = False) -> str:
    """A unified diff (`git diff` style headers), with git's marker for a missing final newline."""
    out = []
    for line in difflib.unified_diff(_lines(before), _lines(after), "/dev/null" if new_file else f"a/{path}",
                                     "/dev/null" if deleted else f"b/{path}"):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _read_current(workspace: Path, path: str, allow: tuple[str, ...] = ()) -> tuple[str | None, str | None]:
    """(the file's text now or None when it does not exist, a note when it cannot be read).

    The path is checked as the effect tool checks it (`check_write_path`: no symlink in it), so
    the file shown is the file that would change; it is read without blocking on a FIFO."""
    if not workspace.is_dir():
        return None, (f"the workspace {workspace} is not on this machine, so there is no diff here: "
                      "the arguments above are the whole change")
    try:
        target = check_write_path(workspace, path, allow=allow)
    except ToolError as exc:
        return None, f"no diff: {exc} (the gate will refuse this call)"
    if not target.exists():
        return None, None
    if target.is_dir():
        return None, f"no diff: {path!r} is a directory (the tool will refuse it)"
    try:
        data = read_regular(target, MAX_PATCH_FILE_BYTES, path)
    except NotRegularFile as exc:
        return None, f"no diff: {exc}"
    if data is None:
        return None, f"no diff: {path!r} is larger than {MAX_PATCH_FILE_BYTES} bytes"
    text = data.decode("utf-8", errors="replace")
    if holds_private_key(text):
        return None, _key_note(path)
    return text, None


def _key_note(path: str) -> str:
    return (f"no diff: {path} holds a private key, which is shown nowhere (not to the model, not here); "
            "the arguments above are the whole change")


def _patch_diff(arguments: dict[str, Any], workspace: Path, allow: tuple[str, ...]) -> tuple[str | None, str | None]:
    """Every shape of apply_patch (one replacement, several edits, a unified diff), computed the
    way the tool will apply it, against the files as they are now."""
    try:
        changes = patch.plan(arguments, ToolContext(run_id="", workspace=workspace, allow_autorun_paths=allow))
    except ToolError as exc:
        return None, f"no diff: {exc} (the gate will refuse it)"
    keys = [c.path for c in changes if c.before is not None and holds_private_key(c.before)]
    if keys:
        return None, _key_note(", ".join(keys))
    out = [unified_diff(c.before or "", c.after or "", c.path, new_file=c.before is None, deleted=c.after is None)
           for c in changes]
    return "".join(out), None if len(changes) == 1 else f"{len(changes)} files"


def _tree_listing(target: Path) -> list[str]:
    files = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())
    shown = files[:MAX_LISTED_FILES]
    return shown + ([f"... and {len(files) - len(shown)} more"] if len(files) > len(shown) else [])


def _fs_diff(tool: str, arguments: dict[str, Any], workspace: Path,
             allow: tuple[str, ...] = ()) -> tuple[str | None, str | None]:
    """move_path as git shows a rename, delete_path as the removal of the file's text (a directory:
    the files it holds), make_dir as a note. Every path is checked as the tool checks it."""
    path = str(arguments.get("path", ""))
    try:
        target = check_write_path(workspace, path, allow=allow)
        if tool == "move_path":
            check_write_path(workspace, str(arguments.get("to", "")), allow=allow)
    except ToolError as exc:
        return None, f"no diff: {exc} (the gate will refuse this call)"
    if tool == "make_dir":
        return None, f"creates the empty directory {path}"
    if not target.exists():
        return None, f"no diff: {path} does not exist (the tool will refuse it)"
    if tool == "move_path":
        to = str(arguments.get("to", ""))
        lines = [f"diff --git a/{path} b/{to}", f"rename from {path}", f"rename to {to}"]
        if target.is_dir():
            lines += [f"  (a directory: {', '.join(_tree_listing(target))})"]
        return "\n".join(lines) + "\n", None
    if target.is_dir():
        return None, f"deletes the directory {path} and everything in it: {', '.join(_tree_listing(target)) or 'empty'}"
    current, note = _read_current(workspace, path, allow)
    if note or current is None:
        return None, note
    return unified_diff(current, "", path, deleted=True), None


def _diff(tool: str, arguments: dict[str, Any], workspace: Path, allow: tuple[str, ...] = (),
          declared: RecordedTool | None = None) -> tuple[str | None, str | None]:
    path = arguments.get("path")
    if tool not in DIFF_TOOLS and declared is not None and declared.path_arg and declared.content_arg:
        # a custom effect that declares its path and content: diffed as write_file is
        arguments = {"path": arguments.get(declared.path_arg), "content": arguments.get(declared.content_arg)}
        path, tool = arguments["path"], "write_file"
    if tool not in DIFF_TOOLS:
        return None, None
    if not workspace.is_dir():
        return None, (f"the workspace {workspace} is not on this machine, so there is no diff here: "
                      "the arguments above are the whole change")
    if tool == "apply_patch":
        return _patch_diff(arguments, workspace, allow)
    if tool != "write_file":
        return _fs_diff(tool, arguments, workspace, allow)
    if not isinstance(path, str):
        return None, None
    current, note = _read_current(workspace, path, allow)
    if note:
        return None, note
    if tool == "write_file":
        content = arguments.get("content")
        if not isinstance(content, str):
            return None, "no diff: the call has no text content"
        if current is None:
            return unified_diff("", content, path, new_file=True), f"{path} does not exist yet: the whole file is new"
        if current == content:
            return "", f"{path} already holds exactly this content"
        return unified_diff(current, content, path), None
    raise AssertionError(tool)


def approval_view(store: Store, run_id: str, approval_id: str | None = None) -> ApprovalView:
    """The whole of one approval request of `run_id`: the named one, else the newest.

    Raises:
        RunNotFoundError: no such run.
        ApprovalNotFound: no such request, or its call is not in the transcript.
    """
    spec = store.get_run(run_id).spec
    records = store.audit(run_id)
    at, request = _request(records, approval_id)
    action_id = _action_id(records, at, request.action_hash)
    if action_id is None:
        raise ApprovalNotFound(f"no gate verdict for the action of {request.approval_id}; the audit log is incomplete")
    tool, arguments = _call(store, run_id, action_id)
    matches = tool == request.tool and action_hash(tool, arguments, request.state_version) == request.action_hash
    opened = [r.event for r in records if isinstance(r.event, ChangeSetOpened)]
    workspace = Path(opened[-1].workspace if opened else spec.workspace)  # a change set: the run's worktree
    try:
        diff, note = _diff(tool, arguments, workspace, tuple(spec.allow_autorun_paths),
                           run_tool_list(store, run_id).get(tool))
    except (OSError, LongrunError) as exc:
        diff, note = None, f"no diff: {exc}"
    return ApprovalView(
        run_id=run_id, approval_id=request.approval_id, tool=tool, arguments=arguments,
        canonical=canonical_json(arguments), action_hash=request.action_hash, state_version=request.state_version,
        action_id=action_id, decision=_decision(records, at, request.approval_id), hash_matches=matches,
        diff=diff, diff_note=note, runs_code=runs_code_warnings(arguments),
        mcp=mcp_for_approver(store, run_id, tool),
    )


def render_view(view: ApprovalView, approvers: list[str]) -> list[str]:
    """The text `longrun show` prints."""
    who = approvers[0] if approvers else "NAME"
    lines = [
        f"approval {view.approval_id}  run {view.run_id}  tool {view.tool}  ({view.decision}; proposed at state "
        f"v{view.state_version}, call {view.action_id})",
        f"action hash: {view.action_hash}",
        "  " + ("recomputed from the arguments below: it matches, so an approval binds exactly these arguments"
                if view.hash_matches else
                "DOES NOT MATCH the arguments below: do not approve; the record of this call is not what was proposed"),
    ]
    lines += [f"RUNS CODE: {path} ({why}): read all of it before approving" for path, why in view.runs_code]
    lines += ["", f"arguments, canonical JSON ({len(view.canonical)} chars; the action hash covers exactly this):",
              view.canonical]
    for key, value in sorted(view.arguments.items()):
        if isinstance(value, str) and ("\n" in value or len(value) > 100):
            lines += ["", f"argument {key!r} ({len(value)} chars), verbatim:"]
            lines += [f"  | {line}" for line in value.split("\n")]
    if view.tool in DIFF_TOOLS or view.diff is not None or view.diff_note is not None:
        lines += ["", "diff against the file as it is now:"]
        if view.diff_note:
            lines.append(f"  ({view.diff_note})")
        if view.diff:
            lines += view.diff.rstrip("\n").split("\n")
    if view.mcp is not None:
        lines += ["", f"MCP tool {view.mcp['tool']!r} of server {view.mcp['server']!r}: an effect, because the run spec "
                  "does not declare it read-only",
                  f"  the server's annotations (hints only, never trusted): {view.mcp['hints']}",
                  "  the server's description (its own text, not a fact):"]
        lines += [f"  | {line}" for line in str(view.mcp["description"]).split("\n")]
    if view.decision == "pending":
        lines += ["", f"approve: longrun approve {view.run_id} {view.approval_id} --as {who}",
                  f'reject:  longrun reject {view.run_id} {view.approval_id} --as {who} --reason "..."']
    return lines
