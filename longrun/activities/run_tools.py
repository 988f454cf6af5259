"""The `record_run_tools` activity: at a run's start, the tools it is offered go into Postgres.

The list is this worker's registry for the run (built-ins, custom tools, and the MCP tools its
servers listed, which `list_mcp_tools` stored just before), each with its schema hash
(`longrun.tools.recorded`). It is written once per run: a retried or repeated call, or a later
generation of the run, finds the hash in the task state and records nothing. From then on every
worker holds the run to it (`ActivityBase.tools_for`), and clients validate against it.
"""

from __future__ import annotations

from longrun.activities.base import ActivityBase, brief
from longrun.activities.contract import Activities, implements
from longrun.models.io import RunRef, RunToolsResult
from longrun.models.state import TaskState
from longrun.tools.recorded import list_sha256, tool_list


class RunToolsActivities(ActivityBase):
    @implements(Activities.record_run_tools)
    def record_run_tools(self, inp: RunRef) -> RunToolsResult:
        """Record the run's tool list and put its hash in the state (idempotent per run)."""
        run_id = inp.run_id
        head = self.head(run_id)
        if head.tools_sha256 is not None:
            return RunToolsResult(tools_sha256=head.tools_sha256, tools=0, state=brief(head))
        tools = self.store.record_run_tools(run_id, tool_list(self.tools_for(run_id)))
        digest = list_sha256(tools)

        def refer(state: TaskState) -> TaskState:
            if state.tools_sha256 is not None:
                return state
            return state.model_copy(update={"tools_sha256": digest})

        new = self.reapply_on_head(run_id, refer, "tools", "tools recorded")
        return RunToolsResult(tools_sha256=new.tools_sha256 or digest, tools=len(tools), state=brief(new))
