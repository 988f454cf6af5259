"""What a run left behind, read from PostgreSQL alone: its audit log checked end to end, its
token usage, and its change set as a patch. Shared by `longrun.Client` and the CLI."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from longrun.auth.audit_check import DecisionReport, verify_decisions
from longrun.client.status import usage_from_audit
from longrun.models.audit import ChangeSetOpened
from longrun.models.provider import Usage
from longrun.store import ChainVerdict, Store
from longrun.workspace import ChangeSet, diff


@dataclass(frozen=True)
class Verification:
    """The run's hash chains (`chains`) and its signed decisions (`decisions`), re-checked."""

    chains: ChainVerdict
    decisions: DecisionReport

    @property
    def ok(self) -> bool:
        return self.chains.ok and self.decisions.ok


@dataclass(frozen=True)
class RunUsage:
    """Tokens the run's model calls used, and how many calls of each kind it made."""

    usage: Usage
    model_calls: int
    tool_calls: int
    turns: int


def verify_run(store: Store, run_id: str) -> Verification:
    """Re-verify the run's three hash chains and every decision's signature.

    Raises:
        RunNotFoundError: no such run.
    """
    store.get_run(run_id)
    return Verification(chains=store.verify_chain(run_id), decisions=verify_decisions(store, run_id))


def run_usage(store: Store, run_id: str) -> RunUsage:
    """The run's usage summed over its audit log (`ModelCalled` events)."""
    usage, calls, tools, turn = usage_from_audit(store.audit(run_id))
    return RunUsage(usage=usage, model_calls=calls, tool_calls=tools, turns=turn)


def change_set_of(store: Store, run_id: str) -> ChangeSet | None:
    """The run's git change set (branch and worktree), or None when it worked in place."""
    opened = [r.event for r in store.audit(run_id) if isinstance(r.event, ChangeSetOpened)]
    if not opened:
        return None
    e = opened[-1]
    return ChangeSet(repo=e.repo, branch=e.branch, base=e.base, worktree=e.worktree, workspace=e.workspace)


def change_set_diff(store: Store, run_id: str, *, stat: bool = False) -> str | None:
    """The run's change set as a patch (`git apply` takes it), or None when it has none.

    Raises:
        RunNotFoundError: no such run.
        GitError: the branch is gone from the repository.
    """
    store.get_run(run_id)
    change = change_set_of(store, run_id)
    return None if change is None else diff(Path(change.repo), change, stat=stat)


__all__ = ["RunUsage", "Verification", "change_set_diff", "change_set_of", "run_usage", "verify_run"]
