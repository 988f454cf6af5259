"""The `list_mcp_tools` activity: ask a run's MCP servers for their tools, once, at its start.

What the servers said is stored as one artifact of the run (JSON: names, schemas, redacted
descriptions, annotations) and referenced from the task state, so the gate, the model call and
`longrun show` read the same listing on any worker, and the workflow's history carries only its
hash. A retried or repeated call finds the reference and lists nothing again. A server that cannot
be listed (not offered by this worker, not started, no answer, a secret missing) is skipped with
its reason: the run goes on without its tools, and the audit says why.

The run's spec only names its servers: what is started or connected to is this worker's
configuration (`longrun.mcp.config`). A name the worker does not offer, or a server a stored spec
defines in place (the old `--mcp NAME=stdio:CMD`), is skipped before anything is started.
"""

from __future__ import annotations

from longrun.activities.base import ActivityBase, brief
from longrun.activities.contract import Activities, implements
from longrun.errors import ToolError
from longrun.mcp import listing, secrets
from longrun.mcp.registry import listing_sha256
from longrun.models.audit import McpToolsListed
from longrun.models.io import McpListResult, RunRef
from longrun.models.mcp import LISTING_URI, McpListing, McpSkipped
from longrun.models.state import ArtifactRef, TaskState


class McpActivities(ActivityBase):
    @implements(Activities.list_mcp_tools)
    def list_mcp_tools(self, inp: RunRef) -> McpListResult:
        """List every MCP server of the run and store the listing (idempotent per run)."""
        run_id = inp.run_id
        spec = self.spec(run_id)
        head = self.head(run_id)
        done = listing_sha256(head)
        if done is not None:
            return self._listed(done, head)
        from longrun.mcp import client  # the SDK, imported where it is used (a second's import)

        result = McpListing()
        for ref in spec.mcp_servers:
            try:
                server = self.deps.trust.mcp.resolve(ref)
                found = secrets.resolve(server)
                with self.heartbeating():
                    listed = client.list_tools(server, found, cwd=self.workspace_of(run_id))
            except ToolError as exc:
                why = f"{exc} (this run goes on without the server's tools; a new run lists them again)"
                result.skipped.append(McpSkipped(server=ref.name, name="", reason=self.redactor.redact(why)))
                continue
            part = listing.entries(server, listed, self.redactor, scrub=found.scrub)
            result.tools.extend(part.tools)
            result.skipped.extend(part.skipped)
        sha = self.store.put_artifact(result.model_dump_json().encode("utf-8"), "application/json", run_id=run_id)

        def refer(state: TaskState) -> TaskState:
            if listing_sha256(state) is not None:
                return state
            ref = ArtifactRef(sha256=sha, uri=LISTING_URI, version=state.state_version)
            return state.model_copy(update={"artifact_refs": [*state.artifact_refs, ref]})

        new = self.reapply_on_head(run_id, refer, "mcp", "MCP tools listed")
        won = listing_sha256(new)
        if won is not None and won != sha:  # another attempt's listing landed first: it is the run's
            return self._listed(won, new)
        self.audit(run_id, McpToolsListed(
            listing_sha256=sha, tools=[t.tool for t in result.tools],
            skipped=[self.redactor.redact(f"{s.server}{'/' + s.name if s.name else ''}: {s.reason}")[:500]
                     for s in result.skipped],
        ))
        return McpListResult(listing_sha256=sha, tools=len(result.tools), skipped=len(result.skipped), state=brief(new))

    def _listed(self, sha: str, state: TaskState) -> McpListResult:
        stored = McpListing.model_validate_json(self.store.get_artifact(sha))
        return McpListResult(listing_sha256=sha, tools=len(stored.tools), skipped=len(stored.skipped),
                             state=brief(state))
