"""Tools from typed Python functions: `longrun.tool` (as a decorator, or called as `longrun.tool(fn, ...)`).

A team writes the function it means, with types and a Google-style docstring, and gets a `Tool`
that goes through the same gate, approvals, scopes, effects ledger and reconcile as the built-ins::

    @longrun.tool
    def search_logs(query: str, limit: int = 20) -> str:
        \"\"\"Search the service logs.

        Args:
            query: the text to look for.
            limit: how many lines to return at most.
        \"\"\"

The input schema is pydantic's for the parameters (`create_model`), each parameter's description
from the docstring's `Args:` section, narrowed to the keywords longrun's validator implements
(`longrun.tools.schema`): a type it cannot check (a nested model, a dict, `gt=`) is refused when
the tool is built, with the parameter's name, never found out mid-run. At every call the arguments
are validated twice: by that schema (the gate, as for any tool) and by pydantic (into the typed
values the function receives). A parameter annotated `ToolContext` gets the call's context (the
workspace, the action id that is the effect's idempotency key) and is not part of the schema.

An effect tool may name its `path_arg` (a workspace-relative path it changes) and `content_arg`
(the whole new text of that file): the path is then confined to the workspace like write_file's
(before any effect and before approval), a scope's globs cover it, and `longrun show` diffs the
content against the file as `write_file` does. Hooks keep the `Tool` contract: `check(args, ctx)`
returns a reason to deny, `fingerprint(args, ctx)` the target's state before the effect,
`reconcile(args, ctx)` whether the effect with `ctx.action_id` happened.

Async functions run on an event loop of their own in the activity's thread (a new one per call);
sync ones run in the activity's thread. Tests: tests/test_tools_functions.py, tests/test_run_custom_tools.py.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import re
import typing
from collections.abc import Callable
from typing import Any, Literal, overload

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from longrun.errors import ToolError
from longrun.models.state import NextAction
from longrun.tools.base import ReconcileOutcome, Tool, ToolContext, ToolOutcome
from longrun.tools.paths import check_write_path, confine
from longrun.tools.schema import check_schema

Hook = Callable[[dict[str, Any], ToolContext], Any]
_SECTION = re.compile(r"^(Args|Arguments|Parameters|Returns?|Raises|Yields?|Examples?|Notes?|Attributes)\s*:\s*$")
_ARG_LINE = re.compile(r"^(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """The description (the text before the first section) and each `Args:` entry's text."""
    lines = inspect.cleandoc(doc or "").splitlines()
    summary: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    indent: int | None = None
    for line in lines:
        header = _SECTION.match(line)
        if header and not line.startswith(" "):
            section, current, indent = header.group(1), None, None
            continue
        if section is None:
            summary.append(line)
            continue
        if section not in ("Args", "Arguments", "Parameters") or not line.strip():
            continue
        depth = len(line) - len(line.lstrip())
        entry = _ARG_LINE.match(line.strip())
        if entry and (indent is None or depth <= indent):
            indent, current = depth, entry.group(1).lstrip("*")
            params[current] = entry.group(3).strip()
        elif current is not None:
            params[current] = f"{params[current]} {line.strip()}".strip()
    return "\n".join(summary).strip(), params


def _narrow(node: Any, where: str) -> Any:
    """pydantic's JSON schema in the validator's subset: titles dropped, `anyOf` of plain types as a
    type list (an Optional), `format` dropped (pydantic checks it at the call)."""
    if isinstance(node, list):
        return [_narrow(n, where) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _narrow(v, where) for k, v in node.items() if k not in ("title", "format")}
    branches = out.get("anyOf")
    if isinstance(branches, list) and "type" not in out:
        plain = [b for b in branches if isinstance(b, dict) and set(b) <= {"type", "description"}
                 and isinstance(b.get("type"), str)]
        others = [b for b in branches if b != {"type": "null"}]
        if len(plain) == len(branches):
            del out["anyOf"]
            out["type"] = [b["type"] for b in plain]
        elif len(others) == 1 and len(branches) == 2 and isinstance(others[0].get("type"), str):
            del out["anyOf"]  # Optional[X] with X constrained (a Literal, a bounded str): X or null
            out.update(others[0])
            out["type"] = [others[0]["type"], "null"]
            if "enum" in out:
                out["enum"] = [*out["enum"], None]
    return out


def _schema(model: type[BaseModel], tool_name: str) -> dict[str, Any]:
    raw = model.model_json_schema()
    if "$defs" in raw:
        raise TypeError(f"tool {tool_name!r}: a parameter's type is a nested model ({', '.join(raw['$defs'])}); "
                        "tool arguments take plain types (str, int, float, bool, Literal, lists of them, Optional)")
    schema: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}
    for name, prop in raw.get("properties", {}).items():
        narrowed = _narrow(prop, name)
        try:
            check_schema(narrowed, name)
        except (ValueError, re.error) as exc:
            raise TypeError(f"tool {tool_name!r}: parameter {name!r} has a type longrun cannot check ({exc}); "
                            "use str, int, float, bool, Literal[...], list[...] of them or Optional, with "
                            "min_length/max_length/pattern/ge/le constraints") from None
        schema["properties"][name] = narrowed
    if raw.get("required"):
        schema["required"] = list(raw["required"])
    return schema


def _run_function(fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    if not inspect.iscoroutinefunction(fn):
        return fn(**kwargs)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(fn(**kwargs))
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:  # called from a loop: not this one
        return pool.submit(asyncio.run, fn(**kwargs)).result()


def _outcome(result: Any) -> ToolOutcome:
    if isinstance(result, ToolOutcome):
        return result
    if isinstance(result, str):
        return ToolOutcome(text=result)
    return ToolOutcome(text=pydantic_core.to_json(result).decode("utf-8"))


class _Bound:
    """The function with its argument model: validates a call's arguments and calls it."""

    def __init__(self, fn: Callable[..., Any], name: str, model: type[BaseModel], context_param: str | None) -> None:
        self.fn, self.name, self.model, self.context_param = fn, name, model, context_param

    def typed(self, args: dict[str, Any]) -> dict[str, Any]:
        try:
            parsed = self.model.model_validate(args)
        except ValidationError as exc:
            problems = "; ".join(f"'{'.'.join(map(str, e['loc']))}' {e['msg']}" for e in exc.errors())
            raise ToolError(f"invalid arguments for {self.name}: {problems}") from None
        return {k: getattr(parsed, k) for k in type(parsed).model_fields}

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        kwargs = self.typed(args)
        if self.context_param is not None:
            kwargs[self.context_param] = ctx
        return _outcome(_run_function(self.fn, kwargs))


def _signature(fn: Callable[..., Any], name: str, docs: dict[str, str]) -> tuple[type[BaseModel], str | None]:
    hints = typing.get_type_hints(fn, include_extras=True)
    fields: dict[str, Any] = {}
    context_param: str | None = None
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise TypeError(f"tool {name!r}: parameter {param.name!r} must be a plain named parameter")
        hint = hints.get(param.name)
        if hint is ToolContext:
            context_param = param.name
            continue
        if hint is None:
            raise TypeError(f"tool {name!r}: parameter {param.name!r} has no type annotation; annotate it "
                            "(the schema the model sees comes from the annotations)")
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (hint, Field(default, description=docs.get(param.name)))
    model = create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
    return model, context_param


def tool_from_function(
    fn: Callable[..., Any], *, name: str | None = None, description: str | None = None,
    kind: Literal["read", "effect"] = "read", needs_approval: bool | None = None,
    check: Hook | None = None, reconcile: Callable[[dict[str, Any], ToolContext], ReconcileOutcome] | None = None,
    fingerprint: Callable[[dict[str, Any], ToolContext], str | None] | None = None,
    path_arg: str | None = None, content_arg: str | None = None,
    allowed_next_actions: frozenset[NextAction] | None = None,
) -> Tool:
    """A `Tool` from a typed function (module docstring).

    Args:
        fn: the function, sync or async; returns text, a `ToolOutcome` or anything pydantic
            serialises to JSON. It raises `ToolError` for a refusal the model should read.
        kind: "read" (no effect outside the run) or "effect" (gated, ledgered, reconciled).
        needs_approval: an effect waits for a human's approval (default True for an effect).
        path_arg: the parameter holding the workspace path an effect changes.
        content_arg: the parameter holding the whole new content of that file (for diffs).

    Raises:
        TypeError: the function or a hook does not fit (the message names the parameter).
    """
    tool_name = name or fn.__name__
    summary, docs = parse_docstring(fn.__doc__)
    if kind not in ("read", "effect"):
        raise TypeError(f"tool {tool_name!r}: kind must be 'read' or 'effect', not {kind!r}")
    approval = (kind == "effect") if needs_approval is None else needs_approval
    if approval and kind != "effect":
        raise TypeError(f"tool {tool_name!r}: only an effect tool can need approval; say kind='effect'")
    if kind == "effect" and reconcile is None:
        raise TypeError(f"tool {tool_name!r}: an effect tool needs `reconcile` (how to tell after a crash "
                        "whether the effect with ctx.action_id happened)")
    model, context_param = _signature(fn, tool_name, docs)
    schema = _schema(model, tool_name)
    for label, arg in (("path_arg", path_arg), ("content_arg", content_arg)):
        if arg is not None and schema["properties"].get(arg, {}).get("type") != "string":
            raise TypeError(f"tool {tool_name!r}: {label}={arg!r} must name a str parameter of the function")
    bound = _Bound(fn, tool_name, model, context_param)

    def gate_check(args: dict[str, Any], ctx: ToolContext) -> str | None:
        try:
            bound.typed(args)
            if path_arg is not None:
                if kind == "effect":
                    check_write_path(ctx.workspace, args[path_arg], allow=ctx.allow_autorun_paths)
                else:
                    confine(ctx.workspace, args[path_arg])
        except ToolError as exc:
            return str(exc)
        return check(args, ctx) if check is not None else None

    return Tool(
        name=tool_name, description=description or summary or tool_name, input_schema=schema, kind=kind,
        needs_approval=approval, run=bound.run, check=gate_check, reconcile=reconcile, fingerprint=fingerprint,
        allowed_next_actions=allowed_next_actions if allowed_next_actions is not None else frozenset(NextAction),
        path_arg=path_arg, content_arg=content_arg,
    )


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *, name: str | None = None, description: str | None = None, kind: Literal["read", "effect"] = "read",
    needs_approval: bool | None = None, check: Hook | None = None,
    reconcile: Callable[[dict[str, Any], ToolContext], ReconcileOutcome] | None = None,
    fingerprint: Callable[[dict[str, Any], ToolContext], str | None] | None = None,
    path_arg: str | None = None, content_arg: str | None = None,
    allowed_next_actions: frozenset[NextAction] | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(fn: Callable[..., Any] | None = None, /, **options: Any) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Decorate a typed function into a `Tool`: `@tool` or `@tool(kind="effect", reconcile=...)`
    (the options of `tool_from_function`)."""
    if fn is not None:
        return tool_from_function(fn, **options)

    def decorate(f: Callable[..., Any]) -> Tool:
        return tool_from_function(f, **options)

    return decorate
