"""A longrun worker: the run workflow and its activities on one task queue.

Several workers may run at once, on one machine or many; they share nothing but Postgres and the
Temporal server. Custom tools (`@longrun.tool`) are handed to it; a name that collides with a
built-in or an MCP tool is refused here, at start:

    longrun.Worker(tools=[search_logs, send_message]).run_sync()        # connects from the settings
    worker = build_worker(client, store, tools=[search_logs, send_message])  # a client you hold

Model providers come from a registry (longrun.providers.registry): the built-ins, those handed
here (`providers={"echo": ModelProvider(...)}`, a prefix taken twice is refused at start) and
installed packages' entry points (`longrun.providers`). Each provider reads the environment names
it declares: this module names no model and no key.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

from temporalio.client import Client
from temporalio.worker import Worker as TemporalWorker
from temporalio.worker import WorkflowRunner

from longrun.activities import AgentActivities, Deps, ErrorMappingInterceptor
from longrun.activities.trust import WorkerTrust
from longrun.mcp.config import McpDirectory
from longrun.providers import Provider
from longrun.providers.price_book import PriceBook
from longrun.providers.registry import ModelProvider, ProviderRegistry
from longrun.service.settings import Settings
from longrun.store import Store
from longrun.telemetry.log_context import LogContextInterceptor
from longrun.telemetry.metrics import MetricsInterceptor, WorkerMetrics
from longrun.telemetry.tracing import flush_tracing, has_tracing_interceptor, tracing_interceptors
from longrun.tools import Tool, ToolRegistry, default_registry
from longrun.tools.loading import with_custom_tools
from longrun.tools.sandbox import SandboxPolicy
from longrun.webhooks.config import WebhookDirectory
from longrun.workflows.agent_run import AgentRunWorkflow
from longrun.workflows.runner import workflow_runner as default_workflow_runner

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
    metrics: WorkerMetrics | None = None,
    workflow_runner: WorkflowRunner | None = None,
) -> TemporalWorker:
    """A worker for the run workflow and every activity, with the activity error mapping.

    `metrics` (None: nothing is counted) receives what the activities do and how long each took
    (`longrun.telemetry.metrics`); serving its registry is the caller's part (`run_worker`).
    `workflow_runner` (None: `longrun.workflows.runner.workflow_runner()`, the sandbox with
    longrun passed through) replaces it, e.g. with Temporal's plain sandbox to compare the two.

    `providers` adds model providers by prefix to the built-ins and entry points; a run naming a
    prefix none has fails at its start. A `provider_for` of the caller's replaces them all (and
    then decides alone which models exist).

    Raises:
        ConfigError: a tool of `tools` collides with a built-in or an MCP tool, or is incomplete;
            a provider of `providers` takes a built-in's prefix; the `OTEL_*` environment names an
            exporter or protocol longrun cannot use."""
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
        metrics=metrics,
        prices=PriceBook(models),
    )
    activities = AgentActivities(deps)
    # a client made by `connect_temporal` already traces, and its worker inherits that; a client
    # of the caller's own gets the interceptor here, so the worker's spans still join the run's trace
    tracing = tracing_interceptors()
    if tracing and has_tracing_interceptor(client.config().get("interceptors")):
        tracing = []
    return TemporalWorker(
        client,
        task_queue=task_queue or settings.task_queue,
        workflows=list(workflows),
        workflow_runner=workflow_runner or default_workflow_runner(),
        activities=activities.all(),
        activity_executor=ThreadPoolExecutor(max_workers=ACTIVITY_THREADS, thread_name_prefix="longrun-activity"),
        max_concurrent_activities=ACTIVITY_THREADS,
        # the timing sees each attempt as Temporal does: after the error mapping
        interceptors=[*tracing, LogContextInterceptor(), *([MetricsInterceptor(metrics)] if metrics else []),
                      ErrorMappingInterceptor()],
    )


class Worker:
    """A longrun worker in your own process: the run workflow and every activity on one task queue,
    with your tools and model providers. It connects from `settings` (default: the environment and
    `longrun dev up`'s stack, as the CLI reads them) when it runs, and serves runs until `stop()`,
    SIGINT or SIGTERM:

        longrun.Worker(tools=[search_logs], providers={"local": LOCAL}).run_sync()

    Args:
        tools: your `@longrun.tool` tools, offered beside the built-ins.
        providers: model providers by prefix (`{"local": ModelProvider(...)}`), beside the built-ins
            and the `longrun.providers` entry points.
        settings: where the stack is, and the worker's sandbox and trust (default `Settings.from_env()`).
        task_queue: the queue to poll (default: the settings' one, `LONGRUN_TASK_QUEUE`).
        registry: the tool registry to add `tools` to (default: the built-ins).
        metrics_port: serve Prometheus metrics at http://`metrics_host`:PORT/metrics (longrun's) and
            PORT+1 (the Temporal SDK's); None (default): no metrics endpoint.

    Raises:
        ConfigError: at construction, before anything connects: a tool's name is taken by a built-in
            (or another of `tools`), a tool is incomplete, or a provider takes a built-in's prefix.
    """

    def __init__(self, *, tools: Sequence[Tool] = (), providers: Mapping[str, ModelProvider] | None = None,
                 settings: Settings | None = None, task_queue: str | None = None,
                 registry: ToolRegistry | None = None, metrics_port: int | None = None,
                 metrics_host: str = "127.0.0.1") -> None:
        self.settings = settings or Settings.from_env()
        self.metrics_port = metrics_port
        self.metrics_host = metrics_host
        self.task_queue = task_queue or self.settings.task_queue
        self.tools = tuple(tools)
        self.providers = dict(providers or {})
        self.registry = with_custom_tools(registry or default_registry(), self.tools)
        ProviderRegistry(self.providers, entry_points=False)  # a taken prefix: refused now, not at run
        self._running: tuple[asyncio.AbstractEventLoop, asyncio.Event] | None = None

    async def run(self, *, on_ready: Callable[[str], None] | None = None) -> None:
        """Serve runs until `stop()`, SIGINT or SIGTERM (in the main thread), or until the task
        running it is cancelled; in-flight activities are left to Temporal's retries.

        Args:
            on_ready: called with a line that says what the worker serves, once it polls.

        Raises:
            StackNotRunning: Temporal or PostgreSQL does not answer (the message says which).
        """
        from longrun.client.connection import connect_temporal, open_database

        metrics, runtime = None, None
        if self.metrics_port is not None:
            from longrun.telemetry.serving import serve_worker_metrics

            metrics, runtime = serve_worker_metrics(self.metrics_host, self.metrics_port)
        client = await connect_temporal(self.settings.temporal_address, self.settings.namespace, runtime=runtime)
        store = open_database(self.settings.database_url)
        loop, stopping = asyncio.get_running_loop(), asyncio.Event()
        handled = []
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stopping.set)
                handled.append(sig)
        self._running = (loop, stopping)
        try:
            async with build_worker(client, store, settings=self.settings, registry=self.registry,
                                    providers=self.providers, task_queue=self.task_queue, metrics=metrics):
                if on_ready is not None:
                    on_ready(self.describe())
                await stopping.wait()
        finally:
            self._running = None
            flush_tracing()
            for sig in handled:
                loop.remove_signal_handler(sig)
            store.engine.dispose()

    def run_sync(self) -> None:
        """`run()` on a new event loop, for code that has none (a script's `__main__`)."""
        asyncio.run(self.run())

    def stop(self) -> None:
        """Ask a running worker to stop (from any thread); `run()` then returns. A no-op when it
        is not running."""
        running = self._running
        if running is not None:
            loop, stopping = running
            loop.call_soon_threadsafe(stopping.set)

    def describe(self) -> str:
        """What this worker serves, in one line (what `longrun worker` prints when it is ready)."""
        offered = ", ".join(s.name for s in self.settings.mcp_servers) or "none"
        custom = ", ".join(t.name for t in self.tools) or "none"
        models = ", ".join(sorted(self.providers)) or "none"
        line = (f"longrun worker on task queue {self.task_queue!r} at {self.settings.temporal_address}; MCP servers "
                f"offered: {offered}; custom tools: {custom}; custom model providers: {models}; Ctrl-C stops it")
        if self.metrics_port is not None:
            line += (f"\nmetrics on http://{self.metrics_host}:{self.metrics_port}/metrics (longrun) and "
                     f"http://{self.metrics_host}:{self.metrics_port + 1}/metrics (Temporal SDK)")
        return line


async def run_worker(settings: Settings | None = None, *, registry: ToolRegistry | None = None,
                     tools: Sequence[Tool] = (), providers: Mapping[str, ModelProvider] | None = None,
                     metrics_port: int | None = None, metrics_host: str = "127.0.0.1") -> None:
    """Run a worker in the foreground until SIGINT/SIGTERM, printing a line once it polls (the
    function form of `Worker(...).run()`, for `longrun worker`).

    With `metrics_port`, longrun's metrics are served at http://HOST:PORT/metrics and the Temporal
    SDK's own (polls, task slots, schedule-to-start latency; prefixed `temporal_`) at PORT+1."""
    worker = Worker(tools=tools, providers=providers, settings=settings, registry=registry,
                    metrics_port=metrics_port, metrics_host=metrics_host)
    await worker.run(on_ready=lambda line: print(line, flush=True))
