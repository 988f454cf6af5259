"""The activity boundary of the run workflow: every activity, its stable name, its typed input
and its typed result, in one place.

The workflow calls activities through these declarations by reference
(`workflow.execute_activity_method(Activities.gate, GateInput(...))`), so a call names no string
and its result type comes from the signature. The implementations (`ModelActivities`,
`ToolActivities`, `RunActivities`, `ChildActivities`, `DecisionActivities`) mark each method `@implements(...)` with its
declaration here: that gives it the same stable name (recorded histories replay against these
names, so they never change) and checks at import that its signature is the declared one.
`AgentActivities` inherits this class last, so mypy also checks every implementation against
its declaration. This module imports only temporalio and `longrun.models`, so it is cheap to pass
through the workflow sandbox.
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar, cast

from temporalio import activity

from longrun.activities import names
from longrun.models.io import (
    AskHumanInput,
    BudgetDecisionInput,
    ChildCollected,
    ChildCreated,
    ChildInput,
    CollectChildInput,
    CommitTurnInput,
    CommitTurnResult,
    CompactInput,
    CompactResult,
    FinishInput,
    GateInput,
    GateResult,
    GrantInput,
    IntentInput,
    IntentResult,
    LoadRunResult,
    McpListResult,
    ModelCallInput,
    ModelCallResult,
    NotifyInput,
    NotifyResult,
    ReconcileResult,
    RecordEventInput,
    RejectApprovalInput,
    RunRef,
    RunToolInput,
    RunToolResult,
    RunToolsResult,
    ScopeGrantInput,
    StartRunInput,
    StateBrief,
    SteerInput,
    SteerResult,
    ToolStepInput,
    ToolStepResult,
    TurnInput,
    TurnResult,
)

F = TypeVar("F", bound=Callable[..., Any])
_NAME = "__longrun_activity_name__"


def declare(name: str) -> Callable[[F], F]:
    """An activity declaration: the stable `name`, remembered for `implements`."""

    def mark(fn: F) -> F:
        setattr(fn, _NAME, name)
        return activity.defn(name=name)(fn)

    return mark


def _declared() -> NoReturn:
    raise NotImplementedError("a declaration of the activity boundary; the worker registers the implementation")


class Activities:
    """Declarations only: each method is one activity (name in `longrun.activities.names`)."""

    @declare(names.LOAD_RUN)
    def load_run(self, inp: RunRef) -> LoadRunResult:
        """The run's spec fields the workflow needs, and its head state."""
        _declared()

    @declare(names.START_RUN)
    def start_run(self, inp: StartRunInput) -> LoadRunResult:
        """`load_run`, then what a run without MCP servers does next in the same call: record its
        tool list and, at its first start, open its change set (one activity, not three)."""
        _declared()

    @declare(names.RECONCILE)
    def reconcile(self, inp: RunRef) -> ReconcileResult:
        """Settle every `unknown` effect through its tool, or name those nobody can decide."""
        _declared()

    @declare(names.TURN)
    def turn(self, inp: TurnInput) -> TurnResult:
        """Commit the previous turn's results, reconcile the ledger, call the model: one round
        trip for what `commit_turn`, `reconcile` and `model_call` do one by one."""
        _declared()

    @declare(names.TOOL_STEP)
    def tool_step(self, inp: ToolStepInput) -> ToolStepResult:
        """Gate one call; when it is allowed without a human, write its intent and run it."""
        _declared()

    @declare(names.MODEL_CALL)
    def model_call(self, inp: ModelCallInput) -> ModelCallResult:
        """Render the request from Postgres, call the provider, append the assistant message."""
        _declared()

    @declare(names.GATE)
    def gate(self, inp: GateInput) -> GateResult:
        """The invariant gate over the persisted state; the verdict is audited."""
        _declared()

    @declare(names.RECORD_EVENT)
    def record_event(self, inp: RecordEventInput) -> None:
        """Append one audit event."""
        _declared()

    @declare(names.GRANT_APPROVAL)
    def grant_approval(self, inp: GrantInput) -> StateBrief:
        """A human's approval into the task state (re-applied on the head) and the audit."""
        _declared()

    @declare(names.REJECT_APPROVAL)
    def reject_approval(self, inp: RejectApprovalInput) -> None:
        """A human's signed rejection, verified against the registered key, into the audit."""
        _declared()

    @declare(names.DECIDE_BUDGET)
    def decide_budget(self, inp: BudgetDecisionInput) -> None:
        """A signed raise (or rejection) of a budget request, verified, into the ledger and the audit."""
        _declared()

    @declare(names.GRANT_SCOPE)
    def grant_scope(self, inp: ScopeGrantInput) -> StateBrief:
        """A signed standing approval (scope), verified, into the task state and the audit."""
        _declared()

    @declare(names.END_SCOPE)
    def end_scope(self, inp: ScopeGrantInput) -> StateBrief:
        """A signed end of a scope, verified, into the task state and the audit."""
        _declared()

    @declare(names.END_REVOKED_SCOPES)
    def end_revoked_scopes(self, inp: RunRef) -> StateBrief:
        """The scopes whose signing key was revoked (or expired) ended, from the keys in Postgres."""
        _declared()

    @declare(names.RECORD_INTENT)
    def record_intent(self, inp: IntentInput) -> IntentResult:
        """An effect's intent, written on the version the gate checked or not at all."""
        _declared()

    @declare(names.RUN_TOOL)
    def run_tool(self, inp: RunToolInput) -> RunToolResult:
        """Run one tool call (an effect after its intent; a state tool on its version)."""
        _declared()

    @declare(names.COMMIT_TURN)
    def commit_turn(self, inp: CommitTurnInput) -> CommitTurnResult:
        """Append the turn's tool results; decide whether compaction fires."""
        _declared()

    @declare(names.COMPACT)
    def compact(self, inp: CompactInput) -> CompactResult:
        """The next projection, after the turn's commit; discarded when the head moved."""
        _declared()

    @declare(names.STEER)
    def steer(self, inp: SteerInput) -> SteerResult:
        """Apply a human's instruction at a turn boundary (re-applied on the head)."""
        _declared()

    @declare(names.ASK_HUMAN)
    def ask_human(self, inp: AskHumanInput) -> StateBrief:
        """Set `next_action = ask_human` with the reason (re-applied on the head)."""
        _declared()

    @declare(names.OPEN_CHANGE_SET)
    def open_change_set(self, inp: RunRef) -> None:
        """Put a run on a git workspace on its own branch, in a worktree (refusing a dirty workspace)."""
        _declared()

    @declare(names.FINISH_RUN)
    def finish_run(self, inp: FinishInput) -> None:
        """Record the run's final status in `runs` and the audit."""
        _declared()

    @declare(names.CREATE_CHILD)
    def create_child(self, inp: ChildInput) -> ChildCreated:
        """Create a subagent's run (and its opening message, in one transaction)."""
        _declared()

    @declare(names.COLLECT_CHILD)
    def collect_child(self, inp: CollectChildInput) -> ChildCollected:
        """A finished subagent's answer as the parent's tool result, and its tokens."""
        _declared()

    @declare(names.LIST_MCP_TOOLS)
    def list_mcp_tools(self, inp: RunRef) -> McpListResult:
        """Ask the run's MCP servers for their tools, once, and store the listing in Postgres."""
        _declared()

    @declare(names.RECORD_RUN_TOOLS)
    def record_run_tools(self, inp: RunRef) -> RunToolsResult:
        """Record the tools the run is offered (built-in, custom, MCP) in Postgres, once; their hash
        into the task state."""
        _declared()

    @declare(names.NOTIFY)
    def notify(self, inp: NotifyInput) -> NotifyResult:
        """One attempt to deliver a notification to a webhook, audited (docs/NOTIFICATIONS.md)."""
        _declared()


def declarations() -> dict[str, Callable[..., Any]]:
    """Activity name -> its declaration on `Activities`."""
    return {getattr(v, _NAME): v for v in vars(Activities).values() if hasattr(v, _NAME)}


def implements(declaration: Callable[..., Any]) -> Callable[[F], F]:
    """Mark a method as the implementation of `declaration`: same activity name, same signature,
    and each call in its own read scope (the instance's `scope()`, see `longrun.activities.scope`).

    Raises:
        TypeError: at import, when the parameter or result types differ from the declaration's.
    """
    name: str = getattr(declaration, _NAME)
    wanted = _signature(declaration)

    def mark(fn: F) -> F:
        got = _signature(fn)
        if got != wanted:
            raise TypeError(f"{fn.__qualname__} implements activity {name!r} as {got}, but it is declared as {wanted}")

        @functools.wraps(fn)
        def in_scope(self: Any, inp: Any) -> Any:
            # every call runs in its own read scope (longrun.activities.scope); one activity
            # calling another's steps in-process joins the caller's
            with self.scope():
                return fn(self, inp)

        setattr(in_scope, _NAME, name)
        return cast(F, activity.defn(name=name)(in_scope))

    return mark


def _signature(fn: Callable[..., Any]) -> tuple[Any, ...]:
    hints = typing.get_type_hints(fn)
    params = [hints.get(p) for p in fn.__code__.co_varnames[1 : fn.__code__.co_argcount]]
    return (*params, hints.get("return"))


__all__ = ["Activities", "declarations", "declare", "implements"]
