"""What a worker lets a run spec name: configured on the worker, so that starting a run never
chooses what the worker executes or connects to (docs/SECURITY.md, "Trust boundaries").

- MCP servers: only those the worker offers (`longrun.mcp.config`); a server a run names that the
  worker does not offer, or one a stored spec defines in place, is skipped at listing with why.
- `sandbox: none`: only where the worker allows it (`LONGRUN_ALLOW_UNSANDBOXED=1`, or its own
  `LONGRUN_SANDBOX=none`); elsewhere the run fails at its start, before any model call.
- an `openai-compatible` `base_url`: only the worker's `LONGRUN_OPENAI_BASE_URL` or one its
  `LONGRUN_ALLOWED_BASE_URLS` lists; elsewhere the run fails at its start, before any request (the
  worker's provider cache refuses it too).
- a model (the run's, its subagents', its summaries'): only one whose prefix has a provider
  registered on the worker (built-in, `build_worker(providers=...)` or entry point
  `longrun.providers`); elsewhere the run fails at its start, naming the prefixes it has. A spec
  is checked only by syntax where it is made, since the client cannot know a worker's providers.

Tests: tests/test_worker_trust.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from longrun.mcp.config import McpDirectory
from longrun.models.spec import RunSpec, base_url_refusal

if TYPE_CHECKING:
    from longrun.providers.registry import ProviderRegistry

UNSANDBOXED_REFUSAL = (
    "the run's spec asks for `sandbox: none` (commands that see whatever the worker sees, its secrets included), "
    "and this worker does not allow that: start the run without --sandbox none (commands then run in bwrap or "
    "unshare), or, if unsandboxed commands are really meant, set LONGRUN_ALLOW_UNSANDBOXED=1 where the worker runs "
    "and restart it"
)


@dataclass(frozen=True)
class WorkerTrust:
    """The worker's side of what a run may name. The default allows nothing beyond the sandboxed,
    MCP-less, worker-configured run."""

    mcp: McpDirectory = field(default_factory=McpDirectory)
    allow_unsandboxed: bool = False
    base_urls: tuple[str, ...] = ()
    """The `base_url`s a run may name: the worker's LONGRUN_OPENAI_BASE_URL and LONGRUN_ALLOWED_BASE_URLS."""
    providers: ProviderRegistry | None = None
    """The worker's model providers; None: no check here (a `provider_for` of the caller's decides)."""

    def refusal(self, spec: RunSpec) -> str | None:
        """Why this worker will not run `spec` at all (None: it will). MCP servers are judged one by
        one when they are listed (`McpDirectory.refusal`), so a run goes on without one it lacks."""
        problems = []
        if spec.sandbox == "none" and not self.allow_unsandboxed:
            problems.append(UNSANDBOXED_REFUSAL)
        if spec.base_url is not None:
            why = base_url_refusal(spec.base_url, self.base_urls)
            if why is not None:
                problems.append(why)
        if self.providers is not None:
            models = (spec.model, spec.subagent_model, spec.context.summary_model)
            for model in dict.fromkeys(m for m in models if m is not None):
                why = self.providers.refusal(model)
                if why is not None:
                    problems.append(why)
        return "; and ".join(problems) or None
