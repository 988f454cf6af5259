"""`@longrun.tool` (longrun.tools.functions), the worker's loading of custom tools
(longrun.tools.loading) and a run's recorded list (longrun.tools.recorded), without the stack."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from pydantic import Field

import longrun
from longrun.errors import ConfigError, ToolError
from longrun.tools import ReconcileOutcome, Tool, ToolContext, ToolRegistry, default_registry
from longrun.tools.loading import load_tools, with_custom_tools
from longrun.tools.recorded import RunToolList, held_to, schema_sha256, tool_list
from tests.support import custom_tools


def never(args: dict[str, Any], ctx: ToolContext) -> ReconcileOutcome:
    return ReconcileOutcome("none")


def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(run_id="r", workspace=tmp_path)


def test_the_schema_comes_from_the_signature_and_the_docstring() -> None:
    @longrun.tool
    def search_logs(query: str, limit: Annotated[int, Field(ge=1, le=100)] = 20,
                    level: Literal["info", "error"] | None = None) -> str:
        """Search the service logs.

        Args:
            query: the text to look for,
                over two lines.
            limit: how many lines at most.
            level: only lines of this level.

        Returns:
            The lines found.
        """
        return query

    assert isinstance(search_logs, Tool) and search_logs.kind == "read" and not search_logs.needs_approval
    assert search_logs.description == "Search the service logs."
    assert search_logs.input_schema == {
        "type": "object", "additionalProperties": False, "required": ["query"],
        "properties": {
            "query": {"type": "string", "description": "the text to look for, over two lines."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20, "description": "how many lines at most."},
            "level": {"type": ["string", "null"], "enum": ["info", "error", None], "default": None,
                      "description": "only lines of this level."},
        },
    }
    registry = ToolRegistry([search_logs])
    with pytest.raises(ToolError, match="'limit' must be <= 100"):
        registry.validate_arguments("search_logs", {"query": "x", "limit": 500})
    with pytest.raises(ToolError, match="'verbose' is not a known argument"):
        registry.validate_arguments("search_logs", {"query": "x", "verbose": True})


def test_sync_and_async_functions_run_with_typed_arguments_and_the_context(tmp_path: Path) -> None:
    seen: list[Any] = []

    @longrun.tool
    def count(n: int, ctx: ToolContext) -> dict[str, int]:
        """Count."""
        seen.append((n, ctx.run_id))
        return {"n": n}

    @longrun.tool
    async def wait(seconds: float) -> str:
        """Wait, asynchronously."""
        await asyncio.sleep(seconds)
        return f"waited {seconds}"

    assert "ctx" not in count.input_schema["properties"], "the context is not an argument"
    assert count.run is not None and wait.run is not None
    assert count.run({"n": 3}, ctx(tmp_path)).text == '{"n":3}'
    assert seen == [(3, "r")]
    assert wait.run({"seconds": 0}, ctx(tmp_path)).text == "waited 0.0"
    with pytest.raises(ToolError, match="invalid arguments for count: 'n'"):
        count.run({"n": "three"}, ctx(tmp_path))


async def test_an_async_tool_also_runs_when_called_from_an_event_loop(tmp_path: Path) -> None:
    @longrun.tool
    async def ping() -> str:
        """Ping."""
        return "pong"

    assert ping.run is not None and ping.run({}, ctx(tmp_path)).text == "pong"


def test_an_effect_declares_its_path_and_the_gate_confines_it(tmp_path: Path) -> None:
    tool = custom_tools.write_notes
    assert (tool.kind, tool.needs_approval, tool.path_arg, tool.content_arg) == ("effect", True, "path", "text")
    assert tool.changed_paths({"path": "notes/a.md", "text": "x"}) == ["notes/a.md"], "what a scope must cover"
    assert tool.check is not None
    assert "contains '..'" in (tool.check({"path": "../out.md", "text": "x"}, ctx(tmp_path)) or "")
    assert tool.check({"path": "notes/a.md", "text": "x"}, ctx(tmp_path)) is None


def test_a_function_that_does_not_fit_is_refused_when_the_tool_is_built() -> None:
    def untyped(x):  # type: ignore[no-untyped-def]
        """No annotation."""

    def nested(x: dict[str, int]) -> str:
        """A dict argument."""
        return ""

    def effect(path: str) -> str:
        """An effect."""
        return path

    with pytest.raises(TypeError, match="parameter 'x' has no type annotation"):
        longrun.tool(untyped)
    with pytest.raises(TypeError, match="parameter 'x' has a type longrun cannot check"):
        longrun.tool(nested)
    with pytest.raises(TypeError, match="an effect tool needs `reconcile`"):
        longrun.tool(kind="effect")(effect)
    with pytest.raises(TypeError, match="only an effect tool can need approval"):
        longrun.tool(needs_approval=True)(effect)
    with pytest.raises(TypeError, match="path_arg='target' must name a str parameter"):
        longrun.tool(kind="effect", reconcile=never, path_arg="target")(effect)
    assert longrun.tool(effect, kind="effect", reconcile=never).name == "effect"


def test_loading_by_reference_and_collisions() -> None:
    assert [t.name for t in load_tools("tests.support.custom_tools:TOOLS")] == ["lookup_ticket", "write_notes"]
    assert [t.name for t in load_tools("tests.support.custom_tools:lookup_ticket")] == ["lookup_ticket"]
    with pytest.raises(ConfigError, match="write it as package.module:attr"):
        load_tools("tests.support.custom_tools")
    with pytest.raises(ConfigError, match="is a dict, not a tool or a list of tools"):
        load_tools("tests.support.custom_tools:TICKETS")
    with pytest.raises(ConfigError, match="cannot import 'no_such_module'"):
        load_tools("no_such_module:TOOLS")
    with pytest.raises(ConfigError, match="'read_file' has the name of a built-in tool"):
        with_custom_tools(default_registry(), custom_tools.COLLIDING)
    with pytest.raises(ConfigError, match="starts with 'mcp__'"):
        with_custom_tools(default_registry(), [custom_tools.shadow_mcp])
    with pytest.raises(ConfigError, match="two tools are named 'write_notes'"):
        with_custom_tools(default_registry(), [custom_tools.write_notes, custom_tools.write_notes_v2])


def test_a_run_is_held_to_its_recorded_tools() -> None:
    worker = with_custom_tools(default_registry(), custom_tools.TOOLS)
    recorded = tool_list(worker)
    assert {t.name: t.source for t in recorded}["write_notes"] == "custom"
    assert schema_sha256(custom_tools.write_notes) != schema_sha256(custom_tools.write_notes_v2)
    same = held_to(worker, recorded, "r1")
    assert same.get("write_notes") is custom_tools.write_notes
    other = held_to(with_custom_tools(default_registry(), [custom_tools.write_notes_v2]), recorded, "r1")
    with pytest.raises(ToolError, match="this worker's 'write_notes' is not the tool run r1 was started with"):
        other.get("write_notes")
    with pytest.raises(ToolError, match="'lookup_ticket' is not run: run r1 was started with it.*does not offer it"):
        other.get("lookup_ticket")
    assert "write_notes" not in [s.name for s in other.specs()], "the model is not offered the other tool"
    listed = RunToolList(recorded)
    assert "write_notes" in listed.scopable() and "lookup_ticket" not in listed.scopable()
    assert "run_command" not in listed.scopable()
