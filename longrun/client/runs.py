"""Starting a run and steering it with words: the two calls that write to PostgreSQL before they
reach the workflow (the run row and opening message; the instruction text), so no text ever
enters Temporal's history."""

from __future__ import annotations

import uuid
from pathlib import Path

from temporalio.client import Client
from temporalio.common import WorkflowIDReusePolicy

from longrun.client import calls
from longrun.errors import ApprovalError, ConfigError
from longrun.models.io import AgentRunInput, SayInput
from longrun.models.run import RunStatus
from longrun.models.spec import RunSpec
from longrun.store import Store
from longrun.workflows.interface import AgentRunInterface


def new_run_id() -> str:
    return "run-" + uuid.uuid4().hex[:12]


async def start_run(
    client: Client, store: Store, spec: RunSpec, *, task_queue: str, run_id: str | None = None,
    actor: str = "operator",
) -> str:
    """Record the run in Postgres (its `run_started` event by `actor`), then start its workflow
    (id = run id; a second start of the same id is refused by Temporal, even after the first
    ended). Every approver must be a registered principal with the approver role and an active
    key (`longrun approvers add`).

    Raises:
        ConfigError: the workspace is missing, or an approver cannot approve.
        RunExistsError: a run with `run_id` exists.
    """
    workspace = Path(spec.workspace)
    if not workspace.is_dir():
        raise ConfigError(f"workspace {spec.workspace} does not exist or is not a directory; pass an existing folder")
    problems = store.approver_problems(spec.approvers)
    if problems:
        raise ConfigError("cannot start the run: " + "; ".join(problems))
    # the context pipeline renders the opening message: imported by the call that needs it, so
    # `longrun say` and `approve` (this module's other users) do not load it (tests/test_import_cost.py)
    from longrun.context.opening import opening_message
    from longrun.context.tokens import estimate_message

    run_id = run_id or new_run_id()
    message = opening_message(spec)
    store.create_run(run_id, spec, actor=actor, opening=message, opening_token_estimate=estimate_message(message))
    await launch(client, run_id, task_queue)
    return run_id


async def launch(client: Client, run_id: str, task_queue: str) -> None:
    """Start the workflow of the recorded run `run_id`. Temporal refuses a second start of the
    same id, even after the first ended (`WorkflowAlreadyStartedError`), so no run runs twice.

    Raises:
        temporalio.exceptions.WorkflowAlreadyStartedError: it was started before."""
    await client.start_workflow(
        AgentRunInterface.run, AgentRunInput(run_id=run_id), id=run_id, task_queue=task_queue,
        id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
    )


async def say(client: Client, store: Store, run_id: str, text: str, constraint: bool = False) -> str:
    """Give the run an instruction (a constraint when `constraint`): the text is stored in
    Postgres first and the workflow is sent only its id. A run that refuses it (finished) keeps
    the stored text unused.

    Raises:
        ApprovalError: the run has finished.
        RunNotFoundError: no such run.
    """
    status = store.get_run(run_id).status
    if RunStatus(status).finished:
        raise ApprovalError(f"run {run_id} has already finished; nothing to change")
    instruction_id = store.queue_instruction(run_id, text, as_constraint=constraint)
    return await calls.update(client, run_id, AgentRunInterface.say,
                              SayInput(instruction_id=instruction_id, constraint=constraint))


__all__ = ["new_run_id", "say", "start_run"]
