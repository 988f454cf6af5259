"""The workflow runner a longrun worker uses: Temporal's sandbox, with `longrun` passed through.

Why: the sandbox imports a workflow's own module afresh for every run it starts (and for every
replay after an eviction), so `@workflow.defn` re-inspects `AgentRunWorkflow` (every method of the
turn loop and its mixins, each attribute read through the sandbox's proxies) once per run. That
was about 20 ms of worker CPU per run, repeated for each of 100 runs starting together, and
again for each generation after a continue-as-new (issue 26). Temporal's sandbox guide asks for
exactly this: pass through the modules whose calls are deterministic, for performance.

What stays checked: every activation still runs inside the sandbox, so the restricted builtins
(`open`, `input`, ...) still fail the workflow task. What the sandbox no longer catches in a
passed-through module (a call to `datetime.now()` or `random` through a module reference) is
kept out of the workflow modules by `tests/test_workflow_determinism.py`, which reads their source;
the recorded histories in tests/histories/ still replay (tests/test_replay*.py).

Module state is not isolated between runs for passed-through modules: the workflow modules keep
none (everything a run holds lives on its workflow instance).
"""

from __future__ import annotations

from temporalio.worker import WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

PASSED_THROUGH = ("longrun",)
"""Shared with the sandbox: longrun's own modules (the workflow declaration too). Third-party
modules (pydantic, ...) are imported only through these, so they are passed through with them."""


def workflow_runner() -> WorkflowRunner:
    """Temporal's sandbox runner, with `PASSED_THROUGH` shared instead of imported per run."""
    return SandboxedWorkflowRunner(restrictions=SandboxRestrictions.default.with_passthrough_modules(*PASSED_THROUGH))
