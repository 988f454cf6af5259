"""A longrun worker: the run workflow and its activities on one task queue.

Several workers may run at once, on one machine or many; they share nothing but Postgres and the
Temporal server. Custom tools (`@longrun.tool`) are handed to it; a name that collides with a
built-in or an MCP tool is refused here, at start:

    worker = build_worker(client, store, tools=[search_logs, send_message])

Model providers come from a registry (longrun.providers.registry): the built-ins, those handed
here (`providers={"echo": ModelProvider(...)}`, a prefix taken twice is refused at start) and
installed packages' entry points (`longrun.providers`). Each provider reads the environment names
it declares: this module names no model and no key.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

from temporalio.client import Client
from temporalio.worker import Worker

from longrun.activities import AgentActivities, Deps, ErrorMappingInterceptor
from longrun.activities.trust import WorkerTrust
from longrun.mcp.config import McpDirectory
from longrun.providers import Provider
from longrun.providers.price_book import PriceBook
from longrun.providers.registry import ModelProvider, ProviderRegistry
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
    built by its registered factory on first use: the keys stay in this process (read from the
    environment names each provider declares), never in a spec."""

    def __init__(self, settings: Settings, providers: ProviderRegistry | None = None,
                 environ: Mapping[str, str] | None = None) -> None:
        self.settings = settings
        self.providers = providers or ProviderRegistry()
        self.environ = os.environ if environ is None else environ
        self._cache: dict[str, Provider] = {}

    def __call__(self, model: str) -> Provider:
        if model not in self._cache:
            self._cache[model] = self.providers.build(model, environ=self.environ,
                                                      allowed_base_urls=self.settings.base_urls())
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


def worker_trust(settings: Settings, providers: ProviderRegistry | None = None) -> WorkerTrust:
    """What a run spec may name on this worker: its configured MCP servers, `sandbox: none` only
    when LONGRUN_ALLOW_UNSANDBOXED (or LONGRUN_SANDBOX=none) says so, its base URLs, and models
    whose prefix `providers` has (None: not checked)."""
    return WorkerTrust(mcp=McpDirectory(settings.mcp_servers), allow_unsandboxed=settings.unsandboxed_allowed(),
                       base_urls=settings.base_urls(), providers=providers)


def _checked_models(provider_for: Callable[[str], Provider] | None, models: ProviderRegistry) -> ProviderRegistry | None:
    """The registry a run's model prefixes are checked against at its start: the one that builds
    them (None when a caller's own `provider_for` decides which models exist)."""
    if provider_for is None:
        return models
    return provider_for.providers if isinstance(provider_for, ProviderCache) else None


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
    providers: Mapping[str, ModelProvider] | None = None,
) -> Worker:
    """A worker for the run workflow and every activity, with the activity error mapping.

    `providers` adds model providers by prefix to the built-ins and entry points; a run naming a
    prefix none has fails at its start. A `provider_for` of the caller's replaces them all (and
    then decides alone which models exist).

    Raises:
        ConfigError: a tool of `tools` collides with a built-in or an MCP tool, or is incomplete;
            a provider of `providers` takes a built-in's prefix."""
    settings = settings or Settings.from_env()
    models = ProviderRegistry(providers)
    deps = Deps(
        store=store,
        registry=with_custom_tools(registry or default_registry(), tools),
        provider_for=provider_for or ProviderCache(settings, models),
        heartbeat_every=heartbeat_every,
        sandbox=worker_sandbox(settings),
        webhooks=WebhookDirectory.from_env(defaults=settings.webhooks),
        worktrees=settings.home / "worktrees",
        trust=worker_trust(settings, _checked_models(provider_for, models)),
        scope_max_ttl_seconds=settings.scope_max_ttl_seconds,
        prices=PriceBook(models),
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
                     tools: Sequence[Tool] = (), providers: Mapping[str, ModelProvider] | None = None) -> None:
    """Run a worker in the foreground until SIGINT/SIGTERM."""
    from longrun.service.client import connect, open_store

    settings = settings or Settings.from_env()
    registry = with_custom_tools(registry or default_registry(), tools)  # a taken name: refused before connecting
    client = await connect(settings)
    store = open_store(settings)
    worker = build_worker(client, store, settings=settings, registry=registry, providers=providers)
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
