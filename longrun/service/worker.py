"""A longrun worker: the run workflow and its activities on one task queue.

Several workers may run at once, on one machine or many; they share nothing but Postgres and the
Temporal server. Custom tools (`@longrun.tool`) are handed to it; a name that collides with a
built-in or an MCP tool is refused here, at start:

    worker = build_worker(client, store, tools=[search_logs, send_message])
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

from temporalio.client import Client
from temporalio.worker import Worker

from longrun.activities import AgentActivities, Deps, ErrorMappingInterceptor
from longrun.activities.trust import WorkerTrust
from longrun.mcp.config import McpDirectory
from longrun.providers import Provider, get_provider
from longrun.service.settings import Settings
from longrun.store import Store
from longrun.tools import Tool, ToolRegistry, default_registry
from longrun.tools.loading import with_custom_tools
from longrun.tools.sandbox import SandboxPolicy
from longrun.webhooks.config import WebhookDirectory
from longrun.workflows.agent_run import AgentRunWorkflow

ACTIVITY_THREADS = 32


class ProviderCache:
    """One provider object per model key (a model name, or one with its server and window),
    built from settings on first use: the keys stay in this process, never in a spec."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._cache: dict[str, Provider] = {}

    def __call__(self, model: str) -> Provider:
        if model not in self._cache:
            s = self.settings
            self._cache[model] = get_provider(
                model, api_key=s.anthropic_api_key, base_url=s.anthropic_base_url,
                openai_api_key=s.openai_api_key, openai_base_url=s.openai_base_url,
                compatible_api_key=s.compatible_api_key, compatible_base_url=s.compatible_base_url,
                allowed_base_urls=s.base_urls(),
            )
        return self._cache[model]

    def close(self) -> None:
        """Close every provider's HTTP client (the SDKs keep connection pools open)."""
        for provider in self._cache.values():
            close = getattr(provider, "close", None)
            if callable(close):
                close()
        self._cache.clear()


def worker_sandbox(settings: Settings) -> SandboxPolicy:
    """The worker's sandbox defaults: LONGRUN_SANDBOX for specs that say `auto`, $LONGRUN_HOME
    hidden from commands (the stack's data, its URLs and keys), LONGRUN_SANDBOX_EXPOSE bound back."""
    return SandboxPolicy(
        mode=settings.sandbox, hide=(str(settings.home),), expose=settings.sandbox_expose,
        file_mb=settings.sandbox_file_mb, tmpfs_mb=settings.sandbox_tmpfs_mb, tasks=settings.sandbox_tasks,
        cgroup=settings.sandbox_cgroup, deny_hosts=stack_hosts(settings),
    )


def worker_trust(settings: Settings) -> WorkerTrust:
    """What a run spec may name on this worker: its configured MCP servers, `sandbox: none` only
    when LONGRUN_ALLOW_UNSANDBOXED (or LONGRUN_SANDBOX=none) says so, and its base URLs."""
    return WorkerTrust(mcp=McpDirectory(settings.mcp_servers), allow_unsandboxed=settings.unsandboxed_allowed(),
                       base_urls=settings.base_urls())


def stack_hosts(settings: Settings) -> tuple[str, ...]:
    """The hosts of the stack's services (Temporal, PostgreSQL): commands allowed the network may
    still not reach them."""
    hosts = [settings.temporal_address.rsplit(":", 1)[0].strip("[]")]
    for url in (settings.database_url, settings.owner_database_url):
        if url:
            host = urlsplit(url).hostname
            if host and not host.startswith("/"):
                hosts.append(host)
    return tuple(dict.fromkeys(h for h in hosts if h))


def build_worker(
    client: Client,
    store: Store,
    *,
    settings: Settings | None = None,
    registry: ToolRegistry | None = None,
    provider_for: Callable[[str], Provider] | None = None,
    task_queue: str | None = None,
    heartbeat_every: float = 2.0,
    workflows: Sequence[type] = (AgentRunWorkflow,),
    tools: Sequence[Tool] = (),
) -> Worker:
    """A worker for the run workflow and every activity, with the activity error mapping.

    Raises:
        ConfigError: a tool of `tools` collides with a built-in or an MCP tool, or is incomplete."""
    settings = settings or Settings.from_env()
    deps = Deps(
        store=store,
        registry=with_custom_tools(registry or default_registry(), tools),
        provider_for=provider_for or ProviderCache(settings),
        heartbeat_every=heartbeat_every,
        sandbox=worker_sandbox(settings),
        webhooks=WebhookDirectory.from_env(defaults=settings.webhooks),
        worktrees=settings.home / "worktrees",
        trust=worker_trust(settings),
        scope_max_ttl_seconds=settings.scope_max_ttl_seconds,
    )
    activities = AgentActivities(deps)
    return Worker(
        client,
        task_queue=task_queue or settings.task_queue,
        workflows=list(workflows),
        activities=activities.all(),
        activity_executor=ThreadPoolExecutor(max_workers=ACTIVITY_THREADS, thread_name_prefix="longrun-activity"),
        max_concurrent_activities=ACTIVITY_THREADS,
        interceptors=[ErrorMappingInterceptor()],
    )


async def run_worker(settings: Settings | None = None, *, registry: ToolRegistry | None = None,
                     tools: Sequence[Tool] = ()) -> None:
    """Run a worker in the foreground until SIGINT/SIGTERM."""
    from longrun.service.client import connect, open_store

    settings = settings or Settings.from_env()
    registry = with_custom_tools(registry or default_registry(), tools)  # a taken name: refused before connecting
    client = await connect(settings)
    store = open_store(settings)
    worker = build_worker(client, store, settings=settings, registry=registry)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with worker:
        offered = ", ".join(s.name for s in settings.mcp_servers) or "none"
        custom = ", ".join(t.name for t in tools) or "none"
        print(f"longrun worker on task queue {settings.task_queue!r} at {settings.temporal_address}; MCP servers "
              f"offered: {offered}; custom tools: {custom}; Ctrl-C stops it", flush=True)
        await stop.wait()
