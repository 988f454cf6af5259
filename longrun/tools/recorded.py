"""A run's recorded tool list: which tools it was offered at its start, each with a hash of what it
is, so that the run is held to exactly those tools on any worker and any client.

Recorded once per run (table `run_tools`, migration 0010; the list's hash in
`TaskState.tools_sha256`) by the `record_run_tools` activity: the built-ins, the worker's custom
tools and the MCP tools its servers listed. Then:

- a worker runs a call only with a tool whose `schema_sha256` equals the recorded one; a recorded
  tool it lacks, or has under the same name with another schema, kind or approval, fails the call
  with what to do (`held_to`), never runs a different tool under the same name;
- the client validates `grant` (which tools can be scoped), `approve --edit` (the edited
  arguments) and `show` (which arguments are a path and a content, for the diff) against it, not
  against whatever the client's own process happens to register.

Runs started before the list was recorded have none: they keep the worker's and client's
registries, as before.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Protocol

from longrun.errors import ToolError
from longrun.models.canonical import canonical_json
from longrun.models.mcp import split_tool_name
from longrun.models.provider import ToolSpec
from longrun.models.tools import RecordedTool, ToolSource
from longrun.tools.base import Tool
from longrun.tools.registry import BUILTIN_TOOLS, ToolRegistry, default_registry
from longrun.tools.schema import SchemaViolation, validate


def schema_sha256(tool: Tool) -> str:
    """What makes a tool the same tool for a run: its name, kind, approval, input schema and the
    arguments it declares as path and content (not its description, which may be reworded)."""
    body = {"name": tool.name, "kind": tool.kind, "needs_approval": tool.needs_approval,
            "input_schema": tool.input_schema, "path_arg": tool.path_arg, "content_arg": tool.content_arg}
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()


def _source(tool: Tool) -> ToolSource:
    if split_tool_name(tool.name) is not None:
        return "mcp"
    return "builtin" if any(tool is b for b in BUILTIN_TOOLS) else "custom"


def record_of(tool: Tool) -> RecordedTool:
    return RecordedTool(name=tool.name, source=_source(tool), kind=tool.kind, needs_approval=tool.needs_approval,
                        schema_sha256=schema_sha256(tool), input_schema=tool.input_schema,
                        description=tool.description, path_arg=tool.path_arg, content_arg=tool.content_arg)


def tool_list(registry: ToolRegistry) -> list[RecordedTool]:
    """The record of every tool of `registry`, in its order."""
    return [record_of(registry.get(n)) for n in registry.names()]


def list_sha256(tools: list[RecordedTool]) -> str:
    """The hash of a recorded list (what goes into the task state)."""
    body = [[t.name, t.schema_sha256] for t in tools]
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()


class HeldRegistry(ToolRegistry):
    """A worker's registry held to a run's recorded list: the recorded tools it has the same of,
    in recorded order; asking for a recorded tool it lacks raises what to do."""

    def __init__(self, tools: list[Tool], missing: dict[str, str]) -> None:
        super().__init__(tools)
        self.missing = missing

    def get(self, name: str) -> Tool:
        if isinstance(name, str) and name in self.missing:
            raise ToolError(self.missing[name])
        return super().get(name)


def held_to(registry: ToolRegistry, recorded: list[RecordedTool], run_id: str) -> ToolRegistry:
    """`registry` as run `run_id` may use it (class docstring of `HeldRegistry`)."""
    tools: list[Tool] = []
    missing: dict[str, str] = {}
    for entry in recorded:
        if entry.name not in registry:
            missing[entry.name] = (
                f"tool {entry.name!r} is not run: run {run_id} was started with it ({entry.source}), and this "
                f"worker does not offer it; start the worker with the tool loaded (`longrun worker --tools "
                f"package.module:tools` or build_worker(tools=[...])), or cancel the run")
            continue
        tool = registry.get(entry.name)
        if schema_sha256(tool) != entry.schema_sha256:
            missing[entry.name] = (
                f"tool {entry.name!r} is not run: this worker's {entry.name!r} is not the tool run {run_id} was "
                f"started with (its schema, kind or approval differ: sha256 {schema_sha256(tool)[:12]}, recorded "
                f"{entry.schema_sha256[:12]}); run the worker with the tool's earlier version, or cancel the run")
            continue
        tools.append(tool)
    return HeldRegistry(tools, missing)


class HeldRegistries:
    """Per-run registries held to their recorded lists, kept (bounded): a list never changes once
    written, so a run's entry is rebuilt only when the worker's registry for it is another object
    (an MCP registry rebuilt after eviction). A run without a list is asked again each time (its
    list may be recorded by a later generation)."""

    MAX_CACHED = 1_000

    def __init__(self) -> None:
        self._cache: OrderedDict[str, tuple[ToolRegistry, ToolRegistry]] = OrderedDict()
        self._lock = threading.Lock()

    def registry(self, run_id: str, base: ToolRegistry,
                 load: Callable[[str], list[RecordedTool] | None]) -> ToolRegistry:
        with self._lock:
            found = self._cache.get(run_id)
            if found is not None and found[0] is base:
                self._cache.move_to_end(run_id)
                return found[1]
        recorded = load(run_id)
        if recorded is None:
            return base
        held = held_to(base, recorded, run_id)
        with self._lock:
            self._cache[run_id] = (base, held)
            while len(self._cache) > self.MAX_CACHED:
                self._cache.popitem(last=False)
        return held


class RunToolList:
    """A run's recorded list as the client reads it (grant, approve --edit, show)."""

    def __init__(self, tools: list[RecordedTool]) -> None:
        self.tools = {t.name: t for t in tools}

    def get(self, name: str) -> RecordedTool | None:
        return self.tools.get(name)

    def scopable(self) -> tuple[str, ...]:
        """The tools a scope may list: the effects that need approval and name a workspace path (a
        scope covers paths: a tool without one could never be covered)."""
        return tuple(n for n, t in self.tools.items() if t.kind == "effect" and t.needs_approval
                     and (t.path_arg or "path") in t.input_schema.get("properties", {}))

    def validate_arguments(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """As `ToolRegistry.validate_arguments`, against the recorded schema.

        Raises:
            ToolError: the run has no such tool, or the arguments do not fit (names the field)."""
        entry = self.tools.get(name)
        if entry is None:
            raise ToolError(f"run has no tool {name!r}; its tools: {', '.join(self.tools)}")
        try:
            validate(arguments, entry.input_schema)
        except SchemaViolation as exc:
            raise ToolError(f"invalid arguments for {name}: {exc}") from exc
        return dict(arguments)

    def specs(self) -> list[ToolSpec]:
        return [ToolSpec(name=t.name, description=t.description, input_schema=t.input_schema)
                for t in self.tools.values()]


class RecordedLists(Protocol):
    def run_tools(self, run_id: str) -> list[RecordedTool] | None: ...


def run_tool_list(store: RecordedLists, run_id: str) -> RunToolList:
    """What the client validates a run's grants, edits and diffs against: its recorded list, else
    (a run started before lists were recorded) the built-ins, as before."""
    recorded = store.run_tools(run_id)
    return RunToolList(recorded if recorded is not None else tool_list(default_registry()))
