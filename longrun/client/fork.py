"""Forking a run (`longrun fork`, issue 29): a new run that starts from another's task state at one
version, with that run's transcript up to that point by reference, and (on git) a branch that
starts at the commit the other run's branch had then. No workflow change: the fork is a new run
whose initial state and transcript come from the store.

What is carried, and what is not:

- the task state at the version, except approvals, scopes and effects (bound to the other run and
  its actions; a settled effect stays in that run's closed items, and the fork's state says so in
  a note, never as an approval or a ledger entry the gate could count); constraints verbatim;
  `objective` replaces the objective when given;
- the transcript through the last entry written at or before that version, cut back to end on a
  user message (a model answer whose calls were not answered yet is asked again), and the
  projection the run had then;
- a version with an effect still `unknown` is refused: the fork could not tell whether it happened.

Tests: tests/test_fork.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from temporalio.client import Client

from longrun.client.reports import change_set_of
from longrun.client.runs import launch, new_run_id
from longrun.context.tokens import estimate_message
from longrun.errors import ConfigError
from longrun.models.audit import RunForked, Steered
from longrun.models.blocks import Message
from longrun.models.state import ClosedItems, EffectStatus, TaskState
from longrun.store import Store
from longrun.store.lineage import ForkPoint
from longrun.store.records import StateVersionRecord, TranscriptRecord
from longrun.workspace import branch_for
from longrun.workspace.changeset import ACTION_TRAILER, ChangeSet
from longrun.workspace.git import GitError, git, git_ok


class ForkRefused(ConfigError):
    """The fork cannot be made as asked; nothing was created. The message says what to do."""


@dataclass(frozen=True)
class ForkRequest:
    """What `longrun fork` asks for: one of `at_version` / `at_turn`, and what changes."""

    run_id: str
    at_version: int | None = None
    at_turn: int | None = None
    model: str | None = None
    objective: str | None = None
    say: str | None = None
    workspace: str | None = None


def fork_point(store: Store, req: ForkRequest) -> tuple[StateVersionRecord, int]:
    """The parent's state version and the last transcript entry the fork starts from.

    `at_turn` N means "after N model answers": the state as it was when the (N+1)-th model request
    was made, and the transcript before that request's answer.

    Raises:
        ForkRefused: no such version or turn, or the version has an effect still unknown."""
    if (req.at_version is None) == (req.at_turn is None):
        raise ForkRefused("say where to fork: --at VERSION (a state version) or --at-turn N (after N model turns)")
    history = store.state_history(req.run_id)
    entries = store.transcript(req.run_id)
    lineage = store.lineage(req.run_id)
    own_from = lineage.parent_through_seq if lineage else 0
    if req.at_version is not None:
        if not 1 <= req.at_version <= len(history):
            raise ForkRefused(f"run {req.run_id} has state versions 1 to {len(history)}, not {req.at_version}; "
                              "`longrun audit RUN` lists them")
        version = history[req.at_version - 1]
        cut = max((e.seq for e in entries if e.created_at <= version.created_at), default=0)
    else:
        turn = req.at_turn or 0
        answers = [e for e in entries if e.role == "assistant"]
        if turn < 0 or turn > len(answers):
            raise ForkRefused(f"run {req.run_id} has {len(answers)} model turn(s), not {turn}")
        nxt = answers[turn] if turn < len(answers) else None
        cut = nxt.seq - 1 if nxt else (entries[-1].seq if entries else 0)
        before = [v for v in history if nxt is None or v.created_at < nxt.created_at]
        if not before or (nxt is not None and nxt.seq <= own_from):
            raise ForkRefused(f"turn {turn} of run {req.run_id} is before its own fork point; fork "
                              f"{lineage.parent_run_id if lineage else 'its parent'} there instead")
        version = before[-1]
    cut = _end_on_user(entries, cut)
    unknown = version.state.unknown_effects()
    if unknown:
        raise ForkRefused(_unknown_message(store, req.run_id, version.version, [e.action_id for e in unknown]))
    return version, cut


def _end_on_user(entries: list[TranscriptRecord], cut: int) -> int:
    """`cut`, moved back past trailing model answers: a fork starts with a request to the model."""
    by_seq = {e.seq: e for e in entries}
    while cut > 1 and by_seq.get(cut) is not None and by_seq[cut].role == "assistant":
        cut -= 1
    return cut


def _unknown_message(store: Store, run_id: str, version: int, actions: list[str]) -> str:
    settled = {r.item_id: r.state_version for r in store.closed_items(run_id, "effect") if r.item_id in actions}
    where = "; ".join(f"{a} was settled at state v{settled[a]}: fork at v{settled[a]} or later" if a in settled else
                      f"{a} is still unknown in the run" for a in actions)
    return (f"state v{version} of run {run_id} has effect(s) whose outcome was not known yet ({where}). A fork cannot "
            f"tell whether they happened, so it is refused until they are reconciled: the run reconciles unknown "
            f"effects before anything else when it goes on (`longrun resume {run_id}`), and one it cannot decide "
            f"is answered with `longrun say {run_id} \"...\"`. Nothing was created")


def carried_state(state: TaskState, req: ForkRequest, parent: str) -> TaskState:
    """The fork's state v1: the parent's at the fork point, minus what was bound to the parent."""
    closed = state.closed
    settled = [e for e in state.effects if e.status is not EffectStatus.unknown]
    happened = closed.effects_confirmed + sum(e.status is EffectStatus.confirmed for e in settled)
    not_happened = closed.effects_none + sum(e.status is EffectStatus.none for e in settled)
    note = (f"forked from run {parent} at state v{state.state_version}: {happened} effect(s) had happened there and "
            f"{not_happened} had not; they are that run's history (its closed items and audit), not approvals or "
            "ledger entries of this run. Its approvals and standing approvals were not carried: every action here is "
            "approved anew")
    update: dict[str, object] = {"approvals": [], "scopes": [], "effects": [], "closed": ClosedItems(),
                                 "notes": [*state.notes, note]}
    if req.objective:
        update["objective"] = req.objective
    return state.model_copy(update=update)


def branch_commit(change: ChangeSet, store: Store, run_id: str, version: int) -> str:
    """The commit of the run's branch at state `version`: the last of the branch's commits whose
    effect was settled `confirmed` by then (an edit is committed before it is settled, and a
    version with an effect in between is refused), else the commit the branch started from."""
    confirmed = {r.item_id for r in store.closed_items(run_id, "effect")
                 if r.state_version <= version and r.item.get("status") == EffectStatus.confirmed.value}
    repo = Path(change.repo)
    if not git_ok(repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{change.branch}"):
        raise ForkRefused(f"the branch {change.branch} of run {run_id} is gone from {repo}; a fork needs the commit "
                          "it had at that version (restore the branch, or fork a run whose branch is there)")
    out = git(repo, "log", "--reverse", "--format=%H%x00%(trailers:key=" + ACTION_TRAILER + ",valueonly)%x1e",
              f"{change.base}..refs/heads/{change.branch}")
    commit = change.base
    for record in out.split("\x1e"):
        sha, _, action = record.strip().partition("\0")
        if not sha:
            continue
        if action.strip() not in confirmed:
            break
        commit = sha
    return commit


def fork_workspace(store: Store, req: ForkRequest, version: int) -> tuple[str, bool, str | None, ChangeSet | None]:
    """(workspace, in_place, commit, the parent's change set) of the fork.

    Raises:
        ForkRefused: an in-place run asked to be forked into its own folder (or without a new one)."""
    spec = store.get_run(req.run_id).spec
    change = change_set_of(store, req.run_id)
    if change is not None:
        if req.workspace:
            raise ForkRefused(f"run {req.run_id} worked on its git branch {change.branch}: its fork gets a branch of "
                              "its own from the commit of that version; leave out --workspace")
        return spec.workspace, False, branch_commit(change, store, req.run_id, version), change
    original = Path(spec.workspace).resolve()
    how = (f"make a fresh copy of it as it was at that point (a git worktree: `git worktree add DIR COMMIT`, or "
           f"`cp -a {spec.workspace} DIR`) and pass `--workspace DIR`")
    if not req.workspace:
        raise ForkRefused(f"run {req.run_id} edited its workspace folder {spec.workspace} itself (--in-place, or not "
                          f"in git), so a fork there would see every edit made after the fork point; {how}. Nothing "
                          "was created")
    target = Path(req.workspace).expanduser().resolve()
    if not target.is_dir():
        raise ForkRefused(f"--workspace {req.workspace} does not exist or is not a directory; {how}")
    if target == original or target.is_relative_to(original) or original.is_relative_to(target):
        raise ForkRefused(f"--workspace {req.workspace} is the folder of run {req.run_id} (or inside it, or around "
                          f"it): a fork never shares its parent's folder; {how}. Nothing was created")
    return str(target), True, None, None


async def fork_run(client: Client, store: Store, req: ForkRequest, *, task_queue: str, actor: str = "operator",
                   run_id: str | None = None) -> str:
    """Make the fork and start its workflow; the new run's id.

    Raises:
        ForkRefused: the fork cannot be made as asked (nothing was created).
        RunNotFoundError: no such run.
        GitError: the fork's branch could not be created."""
    version, cut = fork_point(store, req)
    workspace, in_place, commit, change = fork_workspace(store, req, version.version)
    parent = store.get_run(req.run_id)
    state = carried_state(version.state, req, req.run_id)
    spec = parent.spec.model_copy(update={
        "objective": state.objective, "constraints": list(state.constraints), "workspace": workspace,
        "in_place": in_place, **({"model": req.model} if req.model else {}),
    })
    projection = next((p for p in reversed(store.projections(req.run_id))
                       if p.covers_through_seq <= cut and p.base_state_version <= version.version), None)
    new_id = run_id or new_run_id()
    branch = branch_for(new_id) if change is not None and commit is not None else None
    if change is not None and branch is not None and commit is not None:
        try:
            git(Path(change.repo), "branch", "--no-track", branch, commit)
        except GitError as exc:
            raise ForkRefused(f"cannot create the fork's branch {branch} at {commit[:12]}: {exc}") from exc
    last = store.transcript(req.run_id, after_seq=max(0, cut - 1), through_seq=cut)
    point = ForkPoint(parent_run_id=req.run_id, version=version.version, through_seq=cut, commit=commit,
                      projection_version=projection.version if projection else None,
                      linked_before=max([version.created_at, *(e.created_at for e in last)]))
    try:
        store.create_fork(new_id, spec, state, point, actor=actor, objective_replaced=bool(req.objective))
    except BaseException:
        if change is not None and branch is not None:  # no run was made: its branch goes too
            git(Path(change.repo), "branch", "-D", branch, check=False)
        raise
    store.append_audit(req.run_id, RunForked(fork_run_id=new_id, at_version=version.version, through_seq=cut,
                                             commit=commit, by=actor), actor=actor)
    if req.say:
        message = Message.user_text(req.say)
        seq = store.append_transcript(new_id, message, token_estimate=estimate_message(message), turn=0)
        store.append_audit(new_id, Steered(text=store.redactor.redact(req.say), as_constraint=False, transcript_seq=seq),
                           actor=actor)
    await launch(client, new_id, task_queue)
    return new_id


__all__ = ["ForkRefused", "ForkRequest", "branch_commit", "carried_state", "fork_point", "fork_run", "fork_workspace"]
