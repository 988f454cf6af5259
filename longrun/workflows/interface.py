"""The agent run's workflow as its callers see it: name, input, result, updates, query, signal.

Why a second declaration: `AgentRunWorkflow` is the implementation, and importing it imports the
turn loop, every activity, the tools, the context pipeline and `temporalio.worker` (about a
second of CPU). A client that starts, signals or asks a run needs none of that, only what
Temporal puts on the wire: the workflow type and each handler's name and argument type. This
class declares exactly those, with bodies that never run (no worker registers it), so
`longrun status`, `approve` and the library's `Client` import the models and the Temporal client,
not the worker.

It stays typed (`AgentRunInterface.approve` takes an `ApproveInput`, so a wrong argument is a
mypy error in the client), and tests/test_workflow_interface.py checks that every handler here
has the same name, kind and signature on `AgentRunWorkflow`, so a renamed handler fails a test
instead of leaving a run that never answers. The workflow modules take `WORKFLOW_NAME`,
`REFUSAL_AUDITED` and `SIGNING_KEYS_REVOKED` from here, so the strings have one source.

Imports: the standard library, `temporalio.workflow` and `longrun.models.io` only
(tests/test_cli_imports.py pins what the client loads).
"""

from __future__ import annotations

from typing import NoReturn

from temporalio import workflow

from longrun.models.io import (
    AgentRunInput,
    AgentRunResult,
    ApproveInput,
    BudgetInput,
    RejectInput,
    SayInput,
    ScopeInput,
    StatusQueryResult,
)

WORKFLOW_NAME = "longrun.AgentRun"
"""The workflow type every run is started as."""

REFUSAL_AUDITED = "RefusalAudited"
"""The type of an update failure whose refusal the activity already wrote to the audit (the
client then does not write it again)."""

SIGNING_KEYS_REVOKED = "signing_keys_revoked"
"""The signal that tells a run some signing keys were revoked (it ends their scopes)."""


def _caller_side() -> NoReturn:
    raise NotImplementedError("AgentRunInterface only names the workflow's handlers; "
                              "the worker runs longrun.workflows.agent_run.AgentRunWorkflow")


@workflow.defn(name=WORKFLOW_NAME)
class AgentRunInterface:
    """`AgentRunWorkflow`'s handlers, by name and type, for callers (never registered on a worker)."""

    @workflow.run
    async def run(self, inp: AgentRunInput) -> AgentRunResult:
        _caller_side()

    @workflow.query
    def status_query(self) -> StatusQueryResult:
        _caller_side()

    @workflow.update(name="approve")
    async def approve(self, inp: ApproveInput) -> str:
        _caller_side()

    @workflow.update(name="reject")
    async def reject(self, inp: RejectInput) -> str:
        _caller_side()

    @workflow.update(name="pause")
    async def pause(self) -> str:
        _caller_side()

    @workflow.update(name="resume")
    async def resume(self) -> str:
        _caller_side()

    @workflow.update(name="cancel")
    async def cancel(self) -> str:
        _caller_side()

    @workflow.update(name="say")
    async def say(self, inp: SayInput) -> str:
        _caller_side()

    @workflow.update(name="compact_now")
    async def compact_now(self) -> str:
        _caller_side()

    @workflow.update(name="raise_budget")
    async def raise_budget(self, inp: BudgetInput) -> str:
        _caller_side()

    @workflow.update(name="grant_scope")
    async def grant_scope(self, inp: ScopeInput) -> str:
        _caller_side()

    @workflow.update(name="revoke_scope")
    async def revoke_scope(self, inp: ScopeInput) -> str:
        _caller_side()

    @workflow.signal(name=SIGNING_KEYS_REVOKED)
    async def signing_keys_revoked(self) -> None:
        _caller_side()


__all__ = ["REFUSAL_AUDITED", "SIGNING_KEYS_REVOKED", "WORKFLOW_NAME", "AgentRunInterface"]
