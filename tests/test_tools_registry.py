"""ToolRegistry: registration, lookup, specs, read-only copies and argument validation."""

from __future__ import annotations

from typing import Any

import pytest

from longrun.errors import ToolError
from longrun.models.state import NextAction
from longrun.tools import Tool, ToolOutcome, ToolRegistry, default_registry

BUILTINS = [
    "list_dir", "read_file", "glob", "grep", "read_artifact", "recall", "write_file", "apply_patch", "move_path", "delete_path",
    "make_dir", "run_command",
    "record_decision", "set_next_action", "write_note", "complete_stage", "task",
]


def test_default_registry_has_all_builtins() -> None:
    assert default_registry().names() == BUILTINS


def test_default_registry_is_fresh_each_call() -> None:
    r = default_registry()
    r.register(_custom("extra"))
    assert "extra" not in default_registry()


def test_unknown_tool_lists_available() -> None:
    with pytest.raises(ToolError, match=r"unknown tool 'nope'; available: list_dir, read_file, .*complete_stage"):
        default_registry().get("nope")


def _custom(name: str, **kw: Any) -> Tool:
    fields: dict[str, Any] = {
        "name": kw.pop("tool_name", name),
        "description": "custom",
        "input_schema": {"type": "object", "properties": {"x": {"type": "integer"}}},
        "kind": "read",
        "run": lambda args, ctx: ToolOutcome(text=str(args["x"])),
    }
    fields.update(kw)
    return Tool(**fields)


def test_register_duplicate_refused() -> None:
    r = default_registry()
    with pytest.raises(ValueError, match="already registered"):
        r.register(_custom("read_file"))


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"tool_name": "bad name!"}, "name must match"),
        ({"kind": "effect"}, "needs `reconcile`"),
        ({"kind": "state", "run": None}, "needs `apply_state`"),
        ({"run": None}, "needs `run`"),
        ({"input_schema": {"type": "object", "oneOf": []}}, "unsupported keyword"),
        ({"input_schema": {"type": "string"}}, "type 'object'"),
    ],
)
def test_register_refuses_incomplete_declarations(kw: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ToolRegistry().register(_custom("t", **kw))


def test_specs_and_read_only() -> None:
    r = default_registry()
    assert [s.name for s in r.specs()] == BUILTINS
    reads = ["list_dir", "read_file", "glob", "grep", "read_artifact", "recall"]
    assert [s.name for s in r.specs(read_only=True)] == reads
    ro = r.read_only()
    assert ro.names() == reads and all(ro.get(n).kind == "read" for n in reads)
    with pytest.raises(ToolError):
        ro.get("write_file")
    spec = r.get("read_file").spec()
    assert spec.input_schema["required"] == ["path"]


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("read_file", {}, "'path' is required"),
        ("read_file", {"path": 3}, "'path' must be string, got integer"),
        ("read_file", {"path": "a", "offset": "2"}, "'offset' must be integer, got string"),
        ("read_file", {"path": "a", "offset": True}, "'offset' must be integer, got boolean"),
        ("read_file", {"path": "a", "offset": 0}, "'offset' must be >= 1"),
        ("read_file", {"path": "a", "mode": "w"}, "'mode' is not a known argument"),
        ("read_file", {"path": "a" * 5000}, "'path' is 5000 characters long; the limit is 4096"),
        ("run_command", {"argv": []}, "'argv' must have at least 1 item"),
        ("run_command", {"argv": ["ls", 3]}, r"'argv\[1\]' must be string"),
        ("run_command", {"argv": "ls -la"}, "'argv' must be array, got string"),
        ("set_next_action", {"next_action": "deploy"}, "'next_action' must be one of"),
        ("read_artifact", {"sha256": "xyz"}, "'sha256' does not match"),
        ("read_artifact", {"sha256": "abcdef12345"}, "'sha256' does not match"),
        ("write_note", {"text": ""}, "'text' must be at least 1 character"),
    ],
)
def test_validate_arguments_names_the_field(name: str, args: dict, message: str) -> None:
    with pytest.raises(ToolError, match=f"invalid arguments for {name}: {message}"):
        default_registry().validate_arguments(name, args)


def test_validate_arguments_returns_unchanged_copy() -> None:
    args = {"path": "a.py", "limit": 5}
    out = default_registry().validate_arguments("read_file", args)
    assert out == args and out is not args
    assert default_registry().validate_arguments("list_dir", {}) == {}


def test_validate_arguments_refuses_non_object() -> None:
    with pytest.raises(ToolError, match="expected an object"):
        default_registry().validate_arguments("list_dir", ["."])


def test_allowed_next_actions_table() -> None:
    r = default_registry()
    everything = frozenset(NextAction)
    for name in ["list_dir", "read_file", "glob", "grep", "read_artifact", "record_decision", "set_next_action",
                 "write_note", "complete_stage"]:
        assert r.get(name).allowed_next_actions == everything, name
    assert r.get("write_file").allowed_next_actions == {NextAction.edit}
    for name in ["apply_patch", "move_path", "delete_path", "make_dir"]:
        assert r.get(name).allowed_next_actions == {NextAction.edit}, name
    assert r.get("run_command").allowed_next_actions == {NextAction.inspect, NextAction.test}


def test_custom_tool_registration() -> None:
    r = default_registry()
    r.register(_custom("double"))
    assert r.names()[-1] == "double"
    assert r.validate_arguments("double", {"x": 2}) == {"x": 2}
