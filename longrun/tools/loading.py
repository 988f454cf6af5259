"""A worker's custom tools: loaded by reference (`longrun worker --tools package.module:attr`) and
added to its registry, refused at start when a name is taken.

A custom tool may not take a built-in's name (the run would call one thinking it is the other) nor
the `mcp__` prefix, which names the tools a run's MCP servers list (`mcp__SERVER__TOOL`): both are
refused when the worker starts, with what to rename, never found out mid-run.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from longrun.errors import ConfigError
from longrun.models.mcp import TOOL_PREFIX
from longrun.tools.base import Tool
from longrun.tools.registry import BUILTIN_TOOLS, ToolRegistry

_BUILTIN_NAMES = frozenset(t.name for t in BUILTIN_TOOLS)


def load_tools(reference: str) -> list[Tool]:
    """The tools `package.module:attr` names: a `Tool`, or a list or tuple of them.

    Raises:
        ConfigError: the reference does not import or does not name tools (says what it found)."""
    module_name, sep, attr = reference.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"--tools {reference!r}: write it as package.module:attr (attr a tool or a list of tools)")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"--tools {reference!r}: cannot import {module_name!r} ({exc}); is it on PYTHONPATH, "
                          "or installed in this worker's environment?") from exc
    try:
        found = getattr(module, attr)
    except AttributeError:
        raise ConfigError(f"--tools {reference!r}: module {module_name!r} has no attribute {attr!r}") from None
    tools = [found] if isinstance(found, Tool) else list(found) if isinstance(found, (list, tuple)) else None
    if tools is None or not all(isinstance(t, Tool) for t in tools):
        raise ConfigError(f"--tools {reference!r}: {attr!r} is a {type(found).__name__}, not a tool or a list of "
                          "tools; decorate the functions with @longrun.tool")
    return tools


def with_custom_tools(registry: ToolRegistry, tools: Iterable[Tool]) -> ToolRegistry:
    """A new registry: `registry`'s tools, then `tools`.

    Raises:
        ConfigError: a name collides with a built-in, an MCP tool's prefix or another tool, or a
            declaration is incomplete (the message says what to rename or add)."""
    out = ToolRegistry([registry.get(n) for n in registry.names()])
    for tool in tools:
        if tool.name in _BUILTIN_NAMES:
            raise ConfigError(f"custom tool {tool.name!r} has the name of a built-in tool; rename it "
                              "(@longrun.tool(name=...)): a run must never call one thinking it is the other")
        if tool.name.startswith(TOOL_PREFIX):
            raise ConfigError(f"custom tool {tool.name!r} starts with {TOOL_PREFIX!r}, which names the tools of "
                              "MCP servers (mcp__SERVER__TOOL); rename it (@longrun.tool(name=...))")
        if tool.name in out:
            raise ConfigError(f"two tools are named {tool.name!r}; rename one (@longrun.tool(name=...)) or load it once")
        try:
            out.register(tool)
        except ValueError as exc:
            raise ConfigError(f"{exc}; fix the tool's declaration") from exc
    return out
