"""Git change sets in the activities: opening the run's branch, committing each confirmed file
effect, and settling an unknown one by asking git whether its commit is there.

Why here and not in the tools: a tool knows files, not approvals; the commit's trailers name the
approval (or scope) and the approver behind the effect, which only the run's state and audit
hold. Why in activities: creating a worktree and committing are I/O, and the workflow only
decides *that* a run opens its change set (once, at its start, behind `git-change-sets`).

The lookups: where a run works (`change_set`) comes from its `change_set_opened` audit event,
remembered once found; a run whose spec says `in_place`, a subagent (it reads its parent's
worktree, named in its own spec) and a workspace that is not a git work tree never look.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Literal

from longrun.activities.base import ActivityBase, Deps
from longrun.activities.contract import Activities, implements
from longrun.models.audit import ChangeCommitted, ChangeSetOpened, ErrorRecorded, GateVerdict, ScopeUsed
from longrun.models.io import RunRef
from longrun.tools.base import ReconcileOutcome, Tool, ToolContext
from longrun.workspace import ChangeSet, Trailers, commit_effect, find_commit, is_git_workspace, open_change_set
from longrun.workspace.changeset import clear_stale_locks, paths_clean
from longrun.workspace.git import GitError

MAX_REMEMBERED = 1_000


def default_worktrees() -> Path:
    from longrun.service.settings import longrun_home

    return longrun_home() / "worktrees"


class ChangeSetActivities(ActivityBase):
    def __init__(self, deps: Deps) -> None:
        super().__init__(deps)
        self._change_sets: dict[str, ChangeSet | None] = {}
        self._change_lock = threading.Lock()

    def _remembered(self) -> dict[str, ChangeSet | None]:
        return self._change_sets

    def change_set(self, run_id: str) -> ChangeSet | None:
        """The run's branch and worktree, or None when it works in the workspace folder itself."""
        known = self._remembered()
        if run_id in known:
            return known[run_id]
        spec = self.spec(run_id)
        found: ChangeSet | None = None
        settled = spec.in_place or spec.read_only
        if not settled:
            for rec in self.store.audit(run_id):
                if isinstance(rec.event, ChangeSetOpened):
                    e = rec.event
                    found = ChangeSet(repo=e.repo, branch=e.branch, base=e.base, worktree=e.worktree,
                                      workspace=e.workspace)
            settled = found is not None or not is_git_workspace(Path(spec.workspace))
        if settled:
            with self._change_lock:
                if len(known) >= MAX_REMEMBERED:
                    known.clear()
                known[run_id] = found
        return found

    def workspace_of(self, run_id: str) -> Path:
        change = self.change_set(run_id)
        return Path(change.workspace) if change is not None else Path(self.spec(run_id).workspace)

    @implements(Activities.open_change_set)
    def open_change_set(self, inp: RunRef) -> None:
        """Put the run on its own branch when its workspace is a git work tree (and the spec does
        not say `in_place`). Idempotent: a retry finds the branch, the worktree and the event.
        A dirty workspace is refused: audited, and the run fails with what to do."""
        run_id = inp.run_id
        spec = self.spec(run_id)
        if spec.in_place or spec.read_only or self.change_set(run_id) is not None:
            return
        workspace = Path(spec.workspace)
        if not is_git_workspace(workspace):
            return
        worktrees = self.deps.worktrees or default_worktrees()
        try:
            change = open_change_set(workspace, run_id, worktrees)
        except GitError as exc:
            self.audit(run_id, ErrorRecorded(where="open_change_set", message=self.redactor.redact(str(exc))[:2000]))
            raise
        self.audit(run_id, ChangeSetOpened(repo=change.repo, branch=change.branch, base=change.base,
                                           worktree=change.worktree, workspace=change.workspace))
        self._remembered()[run_id] = change

    # --- inside the effect activities ---------------------------------------------------------

    def _trailers(self, run_id: str, action_id: str) -> Trailers:
        """The approval behind an action: the gate's last allow for it names the hash and the rule;
        an approval's id and approver come from the state, a scope's from its use."""
        allow: GateVerdict | None = None
        scope_use: ScopeUsed | None = None
        for rec in self.store.audit(run_id):
            e = rec.event
            if isinstance(e, GateVerdict) and e.action_id == action_id and e.verdict == "allow":
                allow = e
            elif isinstance(e, ScopeUsed) and e.action_id == action_id:
                scope_use = e
        if allow is None:
            return Trailers(action_id=action_id)
        if scope_use is not None:
            scope = self.scope_of(run_id, scope_use.scope_id)
            return Trailers(action_id, allow.action_hash, scope_use.scope_id, scope.granted_by if scope else "")
        approval = next(iter(self.approvals_bound(run_id, allow.action_hash)), None)
        if approval is not None:
            return Trailers(action_id, allow.action_hash, approval.id, approval.approved_by)
        return Trailers(action_id, allow.action_hash)

    @staticmethod
    def _paths(change: ChangeSet, tool: Tool, arguments: dict[str, Any]) -> list[str]:
        """The call's paths relative to the worktree (the workspace may be a subfolder of it)."""
        prefix = Path(change.workspace).relative_to(Path(change.worktree)).as_posix()
        return [p if prefix == "." else f"{prefix}/{p}" for p in tool.changed_paths(arguments)]

    def commit_change(self, run_id: str, tool: Tool, arguments: dict[str, Any], action_id: str, summary: str,
                      how: Literal["ran", "reconciled"] = "ran") -> str:
        """Commit a confirmed file effect on the run's branch; the line the tool's output gets
        ('' when the run works in place or the tool changes no files)."""
        change = self.change_set(run_id)
        if change is None or not tool.commits:
            return ""
        worktree = Path(change.worktree)
        paths = self._paths(change, tool, arguments)
        clear_stale_locks(worktree, change.branch)
        existing = find_commit(worktree, change.base, action_id)
        sha = existing or commit_effect(worktree, paths, tool.name, summary, self._trailers(run_id, action_id))
        if existing is None:
            self.audit(run_id, ChangeCommitted(action_id=action_id, tool=tool.name, commit=sha, branch=change.branch,
                                               paths=paths, how=how))
        return f"[change set: committed {sha[:12]} on branch {change.branch}]"

    def reconcile_effect(self, run_id: str, tool: Tool, arguments: dict[str, Any], ctx: ToolContext) -> ReconcileOutcome:
        """Decide an unknown effect. In a change set git decides first: the action's commit is
        there -> confirmed. Otherwise the tool's reconcile; a `confirmed` is committed at once
        (the crash came between the write and the commit), so the effect ends as one commit; an
        undecidable one whose paths git shows untouched since the last commit is `none`."""
        assert tool.reconcile is not None
        change = self.change_set(run_id) if tool.commits else None
        if change is None:
            return tool.reconcile(arguments, ctx)
        worktree = Path(change.worktree)
        clear_stale_locks(worktree, change.branch)
        sha = find_commit(worktree, change.base, ctx.action_id)
        if sha is not None:  # the worker died after the commit: the audit may not have heard of it
            if not any(isinstance(r.event, ChangeCommitted) and r.event.action_id == ctx.action_id
                       for r in self.store.audit(run_id)):
                self.audit(run_id, ChangeCommitted(action_id=ctx.action_id, tool=tool.name, commit=sha,
                                                   branch=change.branch, paths=self._paths(change, tool, arguments),
                                                   how="reconciled"))
            return ReconcileOutcome("confirmed", external_id=sha, detail=f"its commit {sha[:12]} is on {change.branch}")
        verdict = tool.reconcile(arguments, ctx)
        if verdict.status == "confirmed":
            line = self.commit_change(run_id, tool, arguments, ctx.action_id, "(reconciled) " + verdict.detail,
                                      how="reconciled")
            return ReconcileOutcome("confirmed", external_id=verdict.external_id,
                                    detail=f"{verdict.detail}; {line.strip('[]')}")
        paths = self._paths(change, tool, arguments)
        if verdict.status == "undecidable" and paths_clean(worktree, paths):
            return ReconcileOutcome("none", detail=f"no commit for it on {change.branch} and its paths are as the "
                                    "last commit has them")
        return verdict


__all__ = ["ChangeSetActivities", "default_worktrees"]
