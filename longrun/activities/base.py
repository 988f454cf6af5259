"""Shared plumbing of the activities: dependencies, cached run specs, tool-call lookup,
heartbeats, and the two ways an activity writes the task state.

Every state write is a compare-and-set; what differs is which version it is set on:
- `write_at(run_id, version, ...)`: on the version the writer's decision rests on (an effect's
  intent on the version the gate checked; a state tool on the same). A moved head raises
  `StaleStateError` and nothing is written: the caller re-decides on the new head.
- `reapply_on_head(...)`: on whatever the head is, re-applied after a lost race. Only for
  changes that do not depend on what the state said (a human's approval or instruction, the
  workflow asking a human, the ledger counting an attempt or settling an effect).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from temporalio import activity

from longrun.activities.prompts import SYSTEM_PROMPT
from longrun.activities.scope import ScopedAccess, ScopeSlot
from longrun.activities.trust import WorkerTrust
from longrun.auth.scopes import DEFAULT_SCOPE_MAX_TTL_SECONDS
from longrun.context import Calibration, fit_request, render_request
from longrun.context.state_block import notes_budget
from longrun.errors import ContextOverflow
from longrun.mcp.registry import RunTools
from longrun.models.audit import AuditEvent
from longrun.models.blocks import ToolUseBlock
from longrun.models.context import Projection, TranscriptItem
from longrun.models.io import StateBrief
from longrun.models.mcp import McpListing
from longrun.models.provider import ModelRequest
from longrun.models.spec import RunSpec
from longrun.models.state import TaskState
from longrun.providers.base import Provider
from longrun.providers.price_book import PriceBook
from longrun.redact import Redactor, default_redactor
from longrun.store import Store, TranscriptRecord
from longrun.telemetry.metrics import WorkerMetrics
from longrun.tools.artifacts import RunArtifacts
from longrun.tools.base import ToolContext
from longrun.tools.recall import RunMemory
from longrun.tools.recorded import HeldRegistries
from longrun.tools.registry import ToolRegistry
from longrun.tools.sandbox import SandboxPolicy
from longrun.webhooks.config import WebhookDirectory

CAS_ATTEMPTS = 8
TAIL_READ_FACTOR = 2
"""`build_request` reads the entries after the projection back to this many times the request
limit (in estimated tokens): `fit_request` keeps a suffix under the limit, so what lies further
back could never be sent, and the margin covers stored estimates that differ from a re-estimate."""

MAX_CACHED_SPECS = 1_000
"""Run specs a worker keeps in memory (a spec never changes, so the cache is only bounded, never
invalidated): enough for every run a worker serves at once, small enough for a worker that
lives for months."""


def brief(state: TaskState) -> StateBrief:
    return StateBrief(version=state.state_version, step=state.current_step.value, next_action=state.next_action.value)


def action_id_for(run_id: str, turn: int, index: int) -> str:
    """The idempotency key of a tool call: derived from run id, turn and call index."""
    return f"{run_id}/t{turn}/c{index}"


def parse_action_id(action_id: str) -> tuple[int, int]:
    _, t, c = action_id.rsplit("/", 2)
    return int(t[1:]), int(c[1:])


@dataclass
class Deps:
    """What the activities need. `provider_for(model)` returns a provider (see longrun.providers)."""

    store: Store
    registry: ToolRegistry
    provider_for: Callable[[str], Provider]
    redactor: Redactor | None = None
    heartbeat_every: float = 2.0
    sandbox: SandboxPolicy = field(default_factory=SandboxPolicy)
    """The worker's sandbox defaults: the mode for specs that say `auto` (LONGRUN_SANDBOX), what to
    hide besides the worker's home ($LONGRUN_HOME) and what to bind back read-only."""
    webhooks: WebhookDirectory = field(default_factory=WebhookDirectory.from_env)
    """Where the webhooks runs name are (URLs and secrets: this worker's environment)."""
    worktrees: Path | None = None
    """Where runs on a git workspace get their worktree (`$LONGRUN_HOME/worktrees` when None)."""
    trust: WorkerTrust = field(default_factory=WorkerTrust)
    """What a run spec may name on this worker: its MCP servers, `sandbox: none`, base URLs."""
    scope_max_ttl_seconds: int = DEFAULT_SCOPE_MAX_TTL_SECONDS
    prices: PriceBook = field(default_factory=PriceBook)
    """What each model costs: the worker's providers' tables and LONGRUN_PRICES."""
    """The longest a scope may stand (LONGRUN_SCOPE_MAX_TTL); `grant_scope` refuses a longer one."""
    metrics: WorkerMetrics | None = None
    """The worker's Prometheus metrics (None: nothing is counted)."""


class ActivityBase(ScopedAccess):
    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.store = deps.store
        self.registry = deps.registry
        self.redactor = deps.redactor or default_redactor()
        self._slot = ScopeSlot()
        self._specs: OrderedDict[str, RunSpec] = OrderedDict()
        self._specs_lock = threading.Lock()
        self._run_tools = RunTools(deps.trust.mcp)
        self._held = HeldRegistries()

    def audited(self, events: list[AuditEvent]) -> None:
        if self.deps.metrics is not None:
            self.deps.metrics.observe(events)

    def spec(self, run_id: str) -> RunSpec:
        """The run's spec, from memory when this worker has read it recently (least recently
        used ones are forgotten past `MAX_CACHED_SPECS`)."""
        with self._specs_lock:
            spec = self._specs.get(run_id)
            if spec is not None:
                self._specs.move_to_end(run_id)
                return spec
        spec = self.store.load_spec(run_id)
        self.remember_spec(run_id, spec)
        return spec

    def remember_spec(self, run_id: str, spec: RunSpec) -> None:
        with self._specs_lock:
            self._specs[run_id] = spec
            self._specs.move_to_end(run_id)
            while len(self._specs) > MAX_CACHED_SPECS:
                self._specs.popitem(last=False)

    def tools_for(self, run_id: str) -> ToolRegistry:
        """The tools of this run: the worker's, plus the MCP tools its servers listed at its start
        (`longrun.mcp`; from the listing in Postgres, the same on every worker), held to the list
        recorded at its start (`longrun.tools.recorded.held_to`) when it has one."""
        spec = self.spec(run_id)
        base = self.registry
        if spec.mcp_servers:
            base = self._run_tools.registry(self.registry, run_id, spec, self.head(run_id), self.store.get_artifact)
        return self._held.registry(run_id, base, self.store.run_tools)

    def mcp_listing(self, run_id: str) -> McpListing | None:
        """What this run's MCP servers listed at its start (None without servers or a listing)."""
        spec = self.spec(run_id)
        if not spec.mcp_servers:
            return None
        return self._run_tools.listing(self.registry, run_id, spec, self.head(run_id), self.store.get_artifact)

    def workspace_of(self, run_id: str) -> Path:
        """Where the run's tools work: its workspace (a git change set's worktree, see
        `changes.ChangeSetActivities`, overrides this)."""
        return Path(self.spec(run_id).workspace)

    def tool_context(
        self, run_id: str, action_id: str = "", now: datetime | None = None, before: str | None = None
    ) -> ToolContext:
        spec = self.spec(run_id)
        return ToolContext(
            run_id=run_id,
            workspace=self.workspace_of(run_id),
            allowed_commands=[list(a) for a in spec.allowed_commands],
            command_timeout=float(spec.command_timeout_seconds),
            action_id=action_id,
            artifacts=RunArtifacts(self.store, run_id),
            memory=RunMemory(self.store, run_id),
            now=now,
            before=before,
            sandbox=dataclasses.replace(
                self.deps.sandbox,
                mode=self.deps.sandbox.mode if spec.sandbox == "auto" else spec.sandbox,
                allow_network=spec.allow_network,
                memory_mb=spec.command_memory_mb,
            ),
            allow_autorun_paths=tuple(spec.allow_autorun_paths),
        )

    def tool_call_for_action(self, run_id: str, action_id: str) -> tuple[str, dict[str, Any]] | None:
        """Find the tool_use an effect's action id points at (turn and call index)."""
        turn, index = parse_action_id(action_id)
        for entry in self.store.transcript(run_id):
            if entry.role == "assistant" and entry.turn == turn:
                uses = [b for b in entry.message.content if isinstance(b, ToolUseBlock)]
                if index < len(uses):
                    edited = self.edited_call(run_id, entry.seq, uses[index].id)
                    return uses[index].name, dict(edited[1]) if edited is not None else dict(uses[index].input)
        return None

    def write_at(
        self, run_id: str, version: int, mutate: Callable[[TaskState], TaskState], actor: str, reason: str
    ) -> TaskState:
        """Compare-and-set on `version`, the one the caller's decision rests on.

        Raises:
            StaleStateError: the head moved past `version`; nothing was written."""
        return self.note_state(self.store.update_state(run_id, version, mutate, actor, reason,
                                                       head=self.known_head(run_id)))

    def reapply_on_head(
        self, run_id: str, mutate: Callable[[TaskState], TaskState], actor: str, reason: str
    ) -> TaskState:
        """Compare-and-set on the current head, re-applied on a lost race (see
        `Store.reapply_on_head`: only for changes that do not depend on what the state said)."""
        return self.note_state(self.store.reapply_on_head(run_id, mutate, actor, reason, attempts=CAS_ATTEMPTS,
                                                          head=self.known_head(run_id)))

    def items(self, entries: list[TranscriptRecord]) -> list[TranscriptItem]:
        return [TranscriptItem(seq=e.seq, message=e.message) for e in entries]

    def tail_base(self, run_id: str) -> float:
        """How far back, in calibrated tokens, `build_request` reads the transcript after the
        projection (`TAIL_READ_FACTOR` times the request limit): what a turn's first read asks for."""
        spec = self.spec(run_id)
        return float(TAIL_READ_FACTOR * spec.context.limit(self.deps.provider_for(spec.provider_key()).info.window))

    def build_request(
        self, run_id: str, limit_override: int | None = None, limit_hard: int | None = None
    ) -> tuple[ModelRequest, Calibration, Projection | None, list[TranscriptRecord], Provider]:
        """Render the next request from Postgres and fit it under the hard limit (after a provider
        overflow: under `limit_override`, or, when even the smallest request is over that, under
        `limit_hard`, the most the provider's own numbers admit)."""
        spec = self.spec(run_id)
        provider = self.deps.provider_for(spec.provider_key())
        state = self.head(run_id)
        projection = self.latest_projection(run_id)
        after = projection.covers_through_seq if projection else 0
        calibration = self.calibration(run_id)
        limit = spec.context.limit(provider.info.window)
        # what fit_request could keep, twice over: before a compaction (or in provider mode) the
        # stretch after the projection grows with the run; the request never holds more than this
        tail = int(self.tail_base(run_id) / (calibration.ratio if calibration.ratio > 0 else 1.0))
        entries = self.transcript_tail(run_id, after_seq=after, tokens=tail)  # a turn's first read brought it
        request = render_request(
            model=spec.model,
            system=SYSTEM_PROMPT,
            projection=projection,
            new_items=self.items(entries),
            state=state,
            tools=self.tools_for(run_id).specs(read_only=spec.read_only),
            max_tokens=min(spec.context.reserve_output, provider.info.max_output),
            notes_tokens=notes_budget(spec.context.limit(provider.info.window)),
        )
        if limit_override is not None:
            limit = min(limit, limit_override)
        try:
            request, _freed = fit_request(
                request, limit=limit, calibration=calibration, keep_min_tail_turns=spec.context.min_tail_turns
            )
        except ContextOverflow:
            hard = None if limit_hard is None else min(spec.context.limit(provider.info.window), limit_hard)
            if hard is None or hard <= limit:
                raise
            request, _freed = fit_request(
                request, limit=hard, calibration=calibration, keep_min_tail_turns=spec.context.min_tail_turns
            )
        return request, calibration, projection, entries, provider

    @contextlib.contextmanager
    def heartbeating(self) -> Iterator[None]:
        """Heartbeat from a side thread while blocking work runs, so that a killed worker's
        activity is retried after the heartbeat timeout instead of the start-to-close timeout."""
        if not activity.in_activity():
            yield
            return
        stop = threading.Event()
        ctx = contextvars.copy_context()

        def beat() -> None:
            while not stop.wait(self.deps.heartbeat_every):
                try:
                    ctx.run(activity.heartbeat)
                except Exception:
                    return

        thread = threading.Thread(target=beat, daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(timeout=1)
